"""Head roles: rules, not a classifier, over a head's statistics (transformer.interpret.atlas_stats); the rule table's
wording for the Head atlas tab; and the head atlas file of a checkpoint as the app reads it.

Roles (`assign_role`): rules, not a classifier, all in ONE table, `ROLE_RULES` (a tuple of `Rule(name,
label, kinds, statistic, op, threshold, description)`), which both `assign_role` and the Head atlas tab's
legend (`legend`) read; the JSON records the table as `role_rules`. A rule applies to the kinds it names and
holds when its statistic passes its threshold (a null statistic never does). Of the rules that hold, the one
passed by the largest ratio wins (statistic / threshold; for "<" threshold / statistic), the first in the
table on ties; a head no rule holds for is "mixed" (`role_reason` names the rule it comes nearest to).
Thresholds sit in gaps of the statistics' distribution on the shipped checkpoint (docs/training.md).

`load_atlas(checkpoint_dir)` reads a checkpoint's head_atlas.json (written by `python -m transformer.atlas`),
again whenever the file changes; `head_roles(atlas)` is every head's role, {kind: [[role per head] per layer]}.
"""
from __future__ import annotations

import json
import threading
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from .atlas_stats import STAT_WORDS, STATS, fmt_stat
from .capture import KINDS

ATLAS = "head_atlas.json"
MIXED = "mixed"


@dataclass(frozen=True)
class Rule:
    """One role: a head of one of `kinds` whose `statistic` is `op` (">=" or "<") `threshold` may have it."""

    name: str  # the role
    label: str  # its short form in the atlas grid's cells
    kinds: tuple  # the attention kinds it applies to
    statistic: str  # a name of STATS
    op: str
    threshold: float  # > 0
    description: str  # what such a head does, in words (the tab's legend)

    def __post_init__(self):
        if self.statistic not in STATS or self.op not in (">=", "<") or not self.threshold > 0 \
                or not self.kinds or not set(self.kinds) <= set(KINDS):
            raise ValueError(f"not a valid role rule: {self}")

    def holds(self, value) -> bool:
        return value is not None and (value >= self.threshold if self.op == ">=" else value < self.threshold)

    def ratio(self, value: float) -> float:
        """How far the value is towards (below 1) or past (above 1) the threshold."""
        if self.op == ">=":
            return value / self.threshold
        return self.threshold / value if value > 0 else float("inf")

    @property
    def text(self) -> str:
        """The rule in words, e.g. 'strongest key is the previous piece: ≥ 33% of queries'."""
        op = "≥" if self.op == ">=" else "<"
        return f"{STAT_WORDS[self.statistic]}: {op} {fmt_stat(self.statistic, self.threshold)}"


SELF_KINDS = ("encoder_self", "decoder_self")
# THE table of roles: assign_role and the Head atlas tab's legend both read it. Names after Voita et al. 2019
# where one fits. Thresholds sit in gaps of the shipped checkpoint's distribution (docs/training.md, "Head atlas").
ROLE_RULES = (
    Rule("previous-token", "prev", SELF_KINDS, "argmax_previous", ">=", 0.36,
         "positional: looks at the piece just before its own"),
    Rule("next-token", "next", ("encoder_self",), "argmax_next", ">=", 0.33,
         "positional: looks at the piece just after its own (the decoder cannot see ahead)"),
    Rule("same-token", "same", SELF_KINDS, "argmax_same", ">=", 0.36, "positional: looks at its own piece"),
    Rule("sink", "sink", KINDS, "argmax_boundary", ">=", 0.5,
         "parks its attention on </s> (or <s>, the decoder's only boundary key): close to doing nothing"),
    Rule("punctuation", "punct", KINDS, "argmax_punctuation", ">=", 0.5, "looks at punctuation"),
    Rule("rare-token", "rare", ("encoder_self", "cross"), "argmax_rarest", ">=", 0.2,
         "looks at the sentence's rarest word piece (lowest probability in the tokenizer)"),
    Rule("alignment", "align", ("cross",), "agreement", ">=", 0.52,
         "looks at the source piece being translated: the one the other cross heads pick too"),
    Rule("diffuse", "diffuse", KINDS, "confidence", "<", 0.3, "spreads its weight over many keys"),
)
ROLES = tuple(r.name for r in ROLE_RULES) + (MIXED,)
MIXED_DESCRIPTION = "no rule holds (hover names the nearest)"


def explain_role(kind: str, stats: dict, rules=None) -> tuple[str, Rule | None, bool]:
    """(role, rule, holds). Of the rules of `rules` (default ROLE_RULES) for `kind` that hold, the one whose
    statistic passes its threshold by the largest ratio (statistic / threshold; for "<": threshold /
    statistic), the first in the table on ties. When none holds: (MIXED, the rule it comes nearest to by
    that ratio or None when no rule applies, False). A statistic that is null never satisfies a rule."""
    best = nearest = None
    for rule in ROLE_RULES if rules is None else rules:
        value = stats.get(rule.statistic) if kind in rule.kinds else None
        if value is None:
            continue
        ratio = rule.ratio(value)
        if rule.holds(value):
            if best is None or ratio > best[0]:
                best = (ratio, rule)
        elif nearest is None or ratio > nearest[0]:
            nearest = (ratio, rule)
    if best is not None:
        return best[1].name, best[1], True
    return MIXED, (nearest[1] if nearest else None), False


def assign_role(kind: str, stats: dict, rules=None) -> str:
    """The role `explain_role` gives."""
    return explain_role(kind, stats, rules)[0]


def role_reason(kind: str, stats: dict, rules=None) -> str:
    """Why a head has its role, in words, e.g. 'strongest key is the previous piece: 36% of queries (needs
    ≥ 33% of queries)'."""
    _, rule, holds = explain_role(kind, stats, rules)
    if rule is None:
        return "no rule applies to this kind of head"
    value = fmt_stat(rule.statistic, stats.get(rule.statistic))
    need = f"{'≥' if rule.op == '>=' else '<'} {fmt_stat(rule.statistic, rule.threshold)}"
    if holds:
        return f"{STAT_WORDS[rule.statistic]}: {value} (needs {need})"
    return f"no rule holds; nearest is {rule.name}: {STAT_WORDS[rule.statistic]}: {value} (needs {need})"


def role_rules_json(rules=None) -> list[dict]:
    """The rule table as the atlas JSON records it (each rule's fields, its `role` name and `rule` text)."""
    return [{"role": r.name, **{k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(r).items()},
             "rule": r.text} for r in (ROLE_RULES if rules is None else rules)]


def legend(rules=None) -> list[dict]:
    """The Head atlas tab's legend, generated from the rule table: one row per role, then mixed.
    [{"role", "label", "kinds": [kind, ...], "rule": words, "description"}]"""
    rows = [{"role": r.name, "label": r.label, "kinds": list(r.kinds), "rule": r.text, "description": r.description}
            for r in (ROLE_RULES if rules is None else rules)]
    return rows + [{"role": MIXED, "label": MIXED, "kinds": list(KINDS), "rule": "none of the above",
                    "description": MIXED_DESCRIPTION}]


# ----------------------------------------------------------------------------------------------------
# The checkpoint's atlas, as the app reads it

_read: dict[Path, tuple[tuple[int, int], dict | None]] = {}  # path -> ((mtime_ns, size), what it held)
_read_lock = threading.Lock()


def load_atlas(checkpoint_dir) -> dict | None:
    """The checkpoint's head_atlas.json, or None when it has none (or an unreadable or malformed one: then a
    warning names the file and what is wrong, once per version of the file).

    Read again whenever the file's modification time or size changes (an atlas rebuilt beside a running app is
    the one it shows next), else the copy read before: treat it as read-only."""
    if checkpoint_dir is None:
        return None
    path = Path(checkpoint_dir) / ATLAS
    try:
        st = path.stat()
    except OSError:
        return None
    key = (st.st_mtime_ns, st.st_size)
    with _read_lock:
        known = _read.get(path)
    if known is not None and known[0] == key:
        return known[1]
    try:
        atlas = json.loads(path.read_text(encoding="utf-8"))
        if not (isinstance(atlas, dict) and isinstance(atlas.get("heads"), list)):
            raise ValueError("no list of heads")  # noqa: TRY004 (bad input: ValueError)
    except (OSError, ValueError) as e:  # (UnicodeDecodeError and json's errors are ValueErrors)
        warnings.warn(f"{path}: not a head atlas, ignored ({e})", stacklevel=2)
        atlas = None
    with _read_lock:
        _read[path] = (key, atlas)
    return atlas


def head_roles(atlas: dict | None) -> dict:
    """{kind: [[role of head h] per layer]} of an atlas (None where a head has no entry); {} for no atlas."""
    out: dict = {}
    for h in (atlas or {}).get("heads", []):
        layers = out.setdefault(h["kind"], [])
        while len(layers) <= h["layer"]:
            layers.append([])
        row = layers[h["layer"]]
        while len(row) <= h["head"]:
            row.append(None)
        row[h["head"]] = h.get("role")
    return out
