"""What helps a newcomer see something in Head ablation: whole layers and kinds at a click, the
head atlas's most important heads as one-click suggestions, and why a single head rarely changes a short sentence."""
from __future__ import annotations

import json

from attention_lens.model import eval_sets
from attention_lens.shell.texts import each, labels, number, page_lang, text, words
from attention_lens.shell.texts import label as said_label
from transformer.interpret.capture import layers_of
from transformer.interpret.roles import load_atlas

KINDS = ("encoder_self", "decoder_self", "cross")
KIND_WORDS = {"encoder_self": "Encoder self", "decoder_self": "Decoder self", "cross": "Cross"}
N_SUGGESTIONS = 3

def label(layer: int, head: int) -> str:
    """A head as the checkboxes name it (0-based in, 'L1 H1' out)."""
    return f"L{layer + 1} H{head + 1}"


def layer_labels(tr, kind: str, layer: int) -> list[str]:
    return [label(layer, h) for h in range(tr.config.n_heads)]


def kind_labels(tr, kind: str) -> list[str]:
    return [lab for l in range(layers_of(tr.model, kind)) for lab in layer_labels(tr, kind, l)]


def add_js_of(sets: dict[str, list[str]], value: str) -> str:
    """A js-only event body, (the ticks) -> the ticks with `sets[value]` added (a button's click)."""
    return (f"(v) => {{ const add = {json.dumps(sets.get(value, []))}; "
            "return [[...new Set([...(v || []), ...add])]]; }")


CLEAR_JS = "() => [[], [], []]"


def ranked(atlas: dict | None) -> list[dict]:
    """The atlas's heads, the largest BLEU drop first (ties: encoder first, then layer and head)."""
    heads = [h for h in (atlas or {}).get("heads", []) if h.get("bleu_drop") is not None]
    return sorted(heads, key=lambda h: (-h["bleu_drop"], KINDS.index(h["kind"]), h["layer"], h["head"]))


def suggestions(tr) -> list[dict]:
    """Up to three one-click suggestions from the translator's head atlas, each {"label", "heads": [(kind, layer,
    head)]}: its most important head, its n_heads most important heads, and the layer whose heads lose the most
    BLEU each alone (summed). [] without an atlas."""
    heads = ranked(load_atlas(tr.checkpoint_dir) if tr.checkpoint_dir else None)
    if not heads:
        return []
    key = lambda h: (h["kind"], h["layer"], h["head"])
    top, n = heads[0], tr.config.n_heads
    layers: dict = {}
    for h in heads:
        layers[(h["kind"], h["layer"])] = layers.get((h["kind"], h["layer"]), 0.0) + h["bleu_drop"]
    (kind, layer), total = max(layers.items(), key=lambda kv: kv[1])
    # each button's words in the page's language (gr.I18n: one marker, the rest as is)
    top_head, top_layer = said_label(f"top_head_{top['kind']}"), said_label(f"top_layer_{kind}")
    return [{"label": f"{top_head} {label(top['layer'], top['head'])} "
                      f"(−{top['bleu_drop']:.2f} BLEU)", "heads": [key(top)]},
            {"label": f"{n} {said_label('top_heads')}", "heads": [key(h) for h in heads[:n]]},
            {"label": f"{top_layer} L{layer + 1}", "what": f"{KIND_WORDS[kind]} L{layer + 1}",
             "heads": [(kind, layer, h) for h in range(n)], "total": total}][:N_SUGGESTIONS]


def suggestions_note(tr) -> str:
    """The line over the suggestions: what the atlas measured, on which sentences, and each suggestion's heads."""
    atlas = load_atlas(tr.checkpoint_dir) if tr.checkpoint_dir else None
    picks = suggestions(tr)
    if not picks:
        return ""
    heads = ranked(atlas)[:tr.config.n_heads]
    # the kinds' short names in `lang` (attention_lens/texts [label] kind_short_<kind>); the BLEU each
    def listed(mode, lang):
        kind = lambda k: labels(lang)[f"kind_short_{k}"]  # loses in detail (plain: the atlas tab has it)
        return ", ".join(f"{kind(h['kind'])} {label(h['layer'], h['head'])}"
                         + (f" −{number(h['bleu_drop'], 2, lang)}" if mode == "detail" else "") for h in heads)
    layer = picks[-1]
    fill = {"on": eval_sets.atlas_words(atlas, tr), "n": (atlas or {}).get("sentences", "some")}
    n, (lk, ll) = fill["n"], layer["heads"][0][:2]
    return each(lambda mode, lang: text("ablation.picks", mode, lang).format(
        **fill | {"heads": listed(mode, lang), "total": number(layer["total"], 2, lang),
                  "layer": f"{labels(lang)['kind_short_' + lk]} L{ll + 1}"}
        | ({} if lang == "en" else {"on": text("ablation.atlas_on", mode, lang).format(n=n)})))


def ticks(tr, picked: int) -> tuple[list[str], list[str], list[str]]:
    """The checkboxes' values for suggestion `picked` (0-based) of `tr`'s atlas: (encoder, decoder, cross)."""
    picks = suggestions(tr)
    if not 0 <= picked < len(picks):
        return [], [], []
    heads = picks[picked]["heads"]
    return tuple([label(l, h) for k, l, h in heads if k == kind] for kind in KINDS)


# -- what Compare compares (attention_lens/<tab>/handlers.py ablate) -------------------------------------------------

def forced_plan(session) -> dict[int, int]:
    """{position: token id} of the pieces the user forced in the trajectory the view holds (session.positions)."""
    return {i: p.token for i, p in enumerate(session.positions) if i and p.forced}


def replays(tr, session, plan: dict[int, int], heads) -> tuple:
    """What Compare decodes, in one batch (Translator.replays): the sequence the view shows decoded by the intact
    model and with `heads` off (the pieces of `plan` forced at their positions, every other piece the model's own
    greedy choice), and the model with `heads` off following the intact prefix up to the cursor (forced where the
    user forced it), which marks where the ablated model would have chosen otherwise."""
    script = {i: (t, True) for i, t in plan.items()}
    prefix = {i: (p.token, p.forced) for i, p in enumerate(session.positions[:session.cursor + 1]) if i}
    return tr.replays(session.source_ids, [(None, script, None), (heads, script, None),
                                           (heads, prefix, session.cursor)])


def topk_step(tr, session) -> int:
    """The step whose top-k the comparison shows: the cursor, or at the end of the sentence the last step that
    predicts a piece (the one after </s> predicts nothing that is used)."""
    ids = session.target_ids
    return session.cursor - 1 if session.cursor > 0 and ids[-1] == tr.config.eos_id else session.cursor


def summary(tr, n_heads: int, session, step: int, plan: dict[int, int], same: bool, lang: str | None = None) -> str:
    """The note over the comparison: how many heads, at which step, the forced pieces both sides keep; in `lang`
    (None: the user's page's language, English for programs: attention_lens/texts [label] abl_*)."""
    w = words(lang or page_lang())
    text = w["abl_off_1" if n_heads == 1 else "abl_off_n"].format(n=n_heads, step=step)
    if step != session.cursor:
        text += w["abl_last"].format(cursor=session.cursor, step=step)
    text += "."
    if plan:
        forced = ", ".join(w["abl_forced_at"].format(piece=tr.tokenizer.piece(t), i=i) for i, t in sorted(plan.items()))
        text += w["abl_kept_1" if len(plan) == 1 else "abl_kept_n"].format(forced=forced)
    if same:
        text += w["abl_same"]
    return text
