"""The Head atlas tab: which heads matter (BLEU lost with each one off) and what each does (its role)."""
from __future__ import annotations

import html
import textwrap

import gradio as gr

from attention_lens.model import eval_sets
from attention_lens.shell.components import Ctx, asset
from attention_lens.shell.texts import LANGS, MODES, labels, number, spans, text, words
from transformer.interpret import atlas_stats as S
from transformer.interpret import roles as R
from transformer.interpret.importance import pruning_stop, pruning_stop_text
from transformer.interpret.roles import ATLAS, head_roles
from transformer.interpret.roles import load_atlas as load_atlas_file
from transformer.model.metrics import read_metrics

TEMPLATE = ('<div class="atlas"><div class="atlas-summary" data-role="summary"></div><div class="atlas-views">'
            '<div class="atlas-grid" data-role="grid"></div><div class="atlas-curve" data-role="curve"></div></div>'
            f'<div class="atlas-help">{spans("atlas.help")}</div>'
            '<div class="atlas-help" data-role="note"></div>'
            '<div class="atlas-legend" data-role="legend"></div></div>')


def load_atlas(tr) -> dict | None:
    """The translator's checkpoint's head atlas (transformer.interpret.roles.load_atlas: re-read when the file
    changes)."""
    return load_atlas_file(tr.checkpoint_dir)


roles = head_roles  # {kind: [[role of head h] per layer]} for the attention view's titles (transformer.interpret.roles)


def plain_role(rule: dict, lang: str = "en", mode: str = "plain") -> str:
    """A role's description from the catalogue (attention_lens/shell/texts/<lang>.toml role.<name>, plain or detail); a
    role the
    table gained since (transformer/interpret/roles.py) reads its own description until the catalogue has it."""
    try:
        return text(f"role.{rule['role']}", mode, lang)
    except KeyError:
        return rule["description"]


def atlas_view(atlas: dict) -> dict:
    """What the atlas view draws: the atlas with each head's hover text, the legend and cell labels generated
    from the rule table (`transformer.interpret.roles.ROLE_RULES`), why the pruning curve ends where it does, and a
    note when the file's roles were assigned by another rule table than today's (then the hover gives no
    reason, since today's rules did not give the role)."""
    current = R.role_rules_json()
    same = atlas.get("role_rules") == current
    n = len(atlas["heads"])
    view = {**atlas, "heads": [{**h, "hover": hover_text(h, atlas.get("chance"), n, same),
                                "hovers": {lang: hover_text(h, atlas.get("chance"), n, same, lang)
                                           for lang in LANGS[1:]}}
                               for h in atlas["heads"]],
            "legend": [{**r, "plain": plain_role(r), "rules": {lang: rule_words(r["role"], lang) for lang in LANGS}}
                       for r in R.legend()], "labels": {r["role"]: r["label"] for r in R.legend()},
            "pruning_note": pruning_stop_text(atlas), "rules_note": None}
    if not same:
        view["rules_note"] = ("This atlas's roles were assigned by an earlier rule table than the one below; "
                              "rebuild it (python -m transformer.atlas) to apply today's rules.")
    return view


HOVER_WIDTH = 64  # characters per hover line: the grid's tooltip must fit beside a cell at 1280 px


def hover_text(h: dict, chance: dict | None, n_heads: int, why: bool = True, lang: str = "en") -> str:
    """The hover of one head, in words of `lang` (HTML, lines of at most HOVER_WIDTH characters): where it is, its
    role and why, the BLEU with it switched off, and its statistics (`transformer.interpret.atlas_stats.STAT_TABLE`'s,
    named
    by the catalogue: [said] stat_* and atlas_hv_*)."""
    w = words(lang)
    stat = lambda name, short=False: w[f"stat_{'short_' if short else ''}{name}"]
    lines = [w["atlas_head_line"].format(kind=w.get(f"kind_short_{h['kind']}", h["kind"]), l=h["layer"] + 1,
                                         h=h["head"] + 1)]
    if why:
        lines.append(w["atlas_hv_why"].format(reason=_reason(h, stat, w, lang)))
    if h.get("bleu_ablated") is not None:
        d = h["bleu_drop"]
        change = w["atlas_hv_loses" if d >= 0 else "atlas_hv_gains"].format(d=number(abs(d), 2, lang))
        lines.append(w["atlas_hv_bleu"].format(bleu=number(h["bleu_ablated"], 2, lang), change=change,
                                               rank=h.get("rank"), n=n_heads))
    at_random = ((chance or {}).get(h["kind"]) or {}).get("confidence")
    lines += _group(h, "argmax_", w["atlas_hv_strongest_random"].format(p=f"{100 * at_random:.0f}") if at_random
                    else w["atlas_hv_strongest"], stat, w, lang)
    lines += _group(h, "share_", w["atlas_hv_weight_on"], stat, w, lang)
    lines += [f"{stat(s)}: {_fmt(s, h[s], w, lang=lang)}" for s in S.STATS
              if not s.startswith(("argmax_", "share_")) and h.get(s) is not None]
    wrapped = [html.escape(part) for line in lines for part in textwrap.wrap(line, HOVER_WIDTH, subsequent_indent="  ")]
    role = w.get(f"role_{h.get('role')}", h.get("role")) if lang != "en" else h.get("role")
    return "<br>".join([wrapped[0], f"{w['role']} <b>{html.escape(str(role))}</b>"] + wrapped[1:])


def rule_words(role: str, lang: str = "en") -> str:
    """A role's rule in words of `lang` (transformer.interpret.roles.Rule.text's sentence: 'strongest key is the
    previous piece: ≥ 36% of queries'); mixed: none of the above."""
    w = words(lang)
    rule = next((r for r in R.ROLE_RULES if r.name == role), None)
    if rule is None:
        return w["atlas_rule_none"]
    return f"{w[f'stat_{rule.statistic}']}: {_need(rule, w, lang)}"


def stop_words(atlas: dict, lang: str = "en") -> str | None:
    """Why the pruning curve ends where it does, in words of `lang`
    (transformer.interpret.importance.pruning_stop_text's sentence, from the catalogue's atlas_stop_*)."""
    st = pruning_stop(atlas)
    if st is None:
        return None
    w, (kind, layer, head) = words(lang), atlas["pruning"][-1]["removed"]
    fill = {"n": st["heads_off"], "head": w["atlas_stop_head"].format(kind=w[f"atlas_kind_{kind}"], l=layer + 1,
                                                                      h=head + 1)}
    if st["reason"] == "kind_off":
        fill["kinds"] = w["atlas_stop_kinds_join"].join(w[f"atlas_kind_{k}"] for k in st["kinds"])
    elif st["reason"] == "below_fraction":
        fill.update(bleu=number(st["bleu"], 2, lang), pct=f"{100 * st['fraction']:.0f}",
                    intact=number(atlas["bleu"], 2, lang), limit=number(st["limit"], 2, lang))
    return w[f"atlas_stop_{st['reason']}"].format(**fill)


def _need(rule, w: dict, lang: str = "en") -> str:
    """What a rule asks of its statistic, in the catalogue's units: '≥ 36% of queries'."""
    return f"{'≥' if rule.op == '>=' else '<'} {_fmt(rule.statistic, rule.threshold, w, lang=lang)}"


def _fmt(name: str, value, w: dict, bare: bool = False, lang: str = "en") -> str:
    """A statistic's value in the catalogue's units (transformer.interpret.atlas_stats.fmt_stat's, in any language);
    `bare`: a share without 'of queries' (its group's title says it)."""
    if value is None:
        return w["atlas_hv_na"]
    unit = S.STAT_UNITS[name]
    if unit in ("queries", "pairs"):
        return w["atlas_hv_pct" if bare else f"atlas_hv_{unit}"].format(p=f"{100 * value:.0f}")
    return w["atlas_hv_pieces"].format(v=number(value, 1, lang)) if unit == "pieces" else \
        w["atlas_hv_nats"].format(v=number(value, 2, lang)) if unit == "nats" else number(value, 2, lang)


def _group(h: dict, prefix: str, title: str, stat, w: dict, lang: str = "en") -> list[str]:
    """The statistics of a group (argmax_*, share_*) as `title` and their short names and values."""
    parts = [f"{stat(s, True)} {_fmt(s, h[s], w, bare=True, lang=lang)}" for s in S.STATS if s.startswith(prefix)
             and h.get(s) is not None]
    return [title + " " + " · ".join(parts)] if parts else []


def _reason(h: dict, stat, w: dict, lang: str) -> str:
    """Why the head has its role (transformer.interpret.roles.role_reason's sentence, in the catalogue's words)."""
    _, rule, holds = R.explain_role(h["kind"], h)
    if rule is None:
        return w["atlas_hv_none"]
    fill = {"words": stat(rule.statistic), "value": _fmt(rule.statistic, h.get(rule.statistic), w, lang=lang),
            "need": _need(rule, w, lang),
            "role": rule.name if lang == "en" else w.get(f"role_{rule.name}", rule.name)}
    return w["atlas_hv_holds" if holds else "atlas_hv_nearest"].format(**fill)


def plain_on(atlas: dict, tr, lang: str = "en") -> str:
    """The atlas's sentences in everyday words: '400 sentences it never learned from: 116 picture descriptions and
    284 everyday sentences' (eval_sets.atlas_words names the sets)."""
    metrics = read_metrics(tr.checkpoint_dir) if tr is not None and tr.checkpoint_dir else {}
    counts = eval_sets.mixed_counts(atlas, metrics) if atlas.get("split") == "mixed_val" else None
    parts = labels(lang)["atlas_parts"].format(a=counts[0], b=counts[1]) if counts else ""
    return text("atlas.on", "plain", lang).format(n=atlas.get("sentences", "the"), parts=parts)


def atlas_texts(atlas: dict, words: str, tr, lang: str = "en") -> dict:
    """The summary over the grid, the note under it, the curve's title and the legend's title, each {plain,
    detail} in `lang` (assets/atlas/atlas.js shows the one the page's language and "Explain" box ask for)."""
    n, st = atlas.get("prunable_within_1_bleu"), pruning_stop(atlas)
    out = {}
    for mode in MODES:
        prunable = "" if n is None else text("atlas.prunable", mode, lang).format(n=n, s="" if n == 1 else "s")
        on = eval_sets.atlas_words(atlas, tr, lang=lang) if mode == "detail" else plain_on(atlas, tr, lang)
        bleu = None if atlas.get("bleu") is None else number(atlas["bleu"], 2, lang)
        said = {"summary": text("atlas.summary", mode, lang).format(heads=len(atlas["heads"]), bleu=bleu, on=on,
                                                                    prunable=prunable),
                "note": "" if st is None else text(f"atlas.stop_{st['reason']}", mode, lang).format(
                    text=stop_words(atlas, lang), n=st["heads_off"], pct=f"{100 * st['fraction']:.0f}"),
                "curve_title": text("atlas.curve_title", mode, lang), "legend": text("atlas.legend", mode, lang),
                "roles": {r["role"]: plain_role(r, lang, mode) for r in R.legend()}}
        for k, v in said.items():
            out.setdefault(k, {})[mode] = v
    return out


MISSING = (f"This checkpoint has no head atlas (`{ATLAS}`): make one with "
           "`python -m transformer.atlas --checkpoint DIR --split val`.")


def content(tr) -> tuple[dict, str]:
    """The tab's content for one model: (the view's value, None when the checkpoint has no atlas; the note shown
    only then)."""
    atlas = load_atlas(tr)
    if atlas is None:
        return None, MISSING
    words = eval_sets.atlas_words(atlas, tr)  # the sentences its BLEU is of, named
    return {**atlas_view(atlas), "eval_set": words, "eval_short": words.split(":")[0],
            "texts": atlas_texts(atlas, words, tr),
            "texts_by_lang": {lang: atlas_texts(atlas, words, tr, lang) for lang in LANGS[1:]}}, ""


def build(ctx: Ctx) -> tuple[list, object]:
    """One view for every model (filled with the user's model when the tab is opened or the model picked: no copy
    per model is kept in the page or the process). Returns (outputs, content: a model's {component: value}) for the
    picker (app.py)."""
    note = gr.Markdown("", visible=False, elem_id="atlas_missing")
    view = gr.HTML(None, html_template=TEMPLATE, css_template=ctx.css, js_on_load=asset("atlas/atlas.js"),
                   head=f'<script src="{ctx.plotly_src}"></script>', elem_id="atlas")

    def filled(tr) -> dict:
        shown, missing = content(tr)
        return {note: gr.update(value=missing, visible=bool(missing)), view: shown}
    return [note, view], filled
