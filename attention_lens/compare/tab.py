"""The Compare tab: two sentences side by side (minimal pairs). "Start both" decodes both as Start does and sends the
two whole trajectories at once (attention_lens/translate/payload.py trajectory_payload); the browser
(assets/compare/compare.js) then steps them in
lockstep with one player and one kind, layer and head, shows their translations and maps side by side and, where
their pieces line up, the difference of the two maps. The tab follows the chosen model (the picker)."""
from __future__ import annotations

import json
from urllib.parse import quote

import gradio as gr

from attention_lens.shell.components import CONC, Ctx, asset, box_note, box_note_value
from attention_lens.shell.inputs import source_problem
from attention_lens.shell.texts import both, each, label, labels, text
from attention_lens.translate import handlers as decoding_views

# Example pairs per source language: (A, B, what differs)
PAIRS = {"de": [("Der Hund beißt den Mann.", "Den Mann beißt der Hund.", "word order, with case saying who bites"),
                ("Ich rufe dich an.", "Ich rufe dich morgen an.", "a separable verb: an moves further away")],
         "en": [("The dog bites the man.", "The man bites the dog.", "word order: who bites whom")]}
PICK = label("pairs_pick")  # in the page's language: gr.I18n markers in a Dropdown's choices are translated
# The word to watch in the first pair, per language: cross-attention's rows are the translation being written,
# its columns the source read, so a target word looks at a source word (never the other way round)
DOG = {"de": "Hund", "en": "dog"}


def intro(tr) -> str:
    """What the tab shows, and what to try, in the model's languages (rows: the target; columns: the source), in both
    versions (attention_lens/shell/texts/en.toml "compare.intro")."""
    src, tgt = tr.config.src_lang, tr.config.tgt_lang
    seen, looks = DOG.get(src, "Hund"), DOG.get(tgt, "dog")
    return each(lambda mode, lang: text("compare.intro", mode, lang).format(
        tgt=labels(lang)[f"lang_{tgt}"], src=labels(lang)[f"lang_{src}"], looks=looks, seen=seen))


TEMPLATE = f"""<div class="cmp" data-model="${{default_model}}" data-pair="${{default_pair}}" tabindex="0"
  aria-label="two sentences side by side: ← → step both"
  data-label="label.cmp_aria">
  <div class="cmp-status" data-role="status">{both("cmp_pick")}</div>
  <div class="cmp-stale" data-role="stale" hidden>{both("cmp_stale")}</div>
  <div class="cmp-bar" data-role="bar" hidden>
    <button type="button" data-role="back">{both("back")}</button><button type="button" data-role="step">
      {both("step")}</button>
    <input type="range" data-role="scrub" min="0" max="0" step="1" value="0" aria-label="step of both"
      data-label="label.cmp_scrub">
    <span class="cmp-stepno" data-role="stepno"></span>
    <span class="cmp-kinds"><button type="button" data-kind="encoder_self">{both("kind_short_encoder_self")}</button>
      <button type="button" data-kind="decoder_self">{both("kind_short_decoder_self")}</button><button type="button"
      data-kind="cross">{both("kind_short_cross")}</button></span>
    <label>{both("layer_cap")} <select data-role="layer"></select></label> <label>{both("head_cap")}
      <select data-role="head"></select></label>
    <span class="cmp-title" data-role="title"></span> <span class="cmp-axes" data-role="axes"></span>
  </div>
  <div class="cmp-panels" data-role="panels" hidden>
    <div class="cmp-panel"><div class="cmp-name">A</div><div class="cmp-src" data-role="src-a"></div>
      <div class="cmp-tr" data-role="tr-a"></div><canvas data-role="map-a"></canvas></div>
    <div class="cmp-panel"><div class="cmp-name">B</div><div class="cmp-src" data-role="src-b"></div>
      <div class="cmp-tr" data-role="tr-b"></div><canvas data-role="map-b"></canvas></div>
    <div class="cmp-panel"><div class="cmp-name">{both("cmp_diff")}</div>
      <div class="cmp-src" data-role="align"></div><div class="cmp-tr" data-role="dscale"></div>
      <canvas data-role="map-d"></canvas></div>
  </div>
  <div class="cmp-help" data-role="scale"></div>
  <div class="cmp-tip" data-role="tip" hidden></div>
</div>"""


def pair_choices(tr) -> list[tuple[str, str]]:
    """The example pairs of the model's source language as dropdown choices (the value: [A, B] as JSON)."""
    src = tr.config.src_lang  # what differs: the catalogue's pair_<lang>_<n> (English: PAIRS' own words)
    pairs = PAIRS.get(src, [])
    return [(PICK, "")] + [(f"{a}  |  {b}  ({label(f'pair_{src}_{i + 1}')})", json.dumps([a, b], ensure_ascii=False))
                           for i, (a, b, _) in enumerate(pairs)]


def first_pair(tr) -> tuple[str, str]:
    pairs = PAIRS.get(tr.config.src_lang, [])
    return (pairs[0][0], pairs[0][1]) if pairs else ("", "")


def start_both(models, a, b, k, key):
    """Both sentences decoded as Start decodes one: {a, b} trajectory payloads, and the model's key and label."""
    tr = models.get(key)
    pa, pb = decoding_views.start(tr, a, k, False)[2], decoding_views.start(tr, b, k, False)[2]
    return {"a": pa, "b": pb, "model": tr.key, "model_label": models.label(key)}


def build(ctx: Ctx) -> None:
    models, tr = ctx.models, ctx.tr
    about = gr.Markdown(intro(tr), elem_id="compare_intro")
    a0, b0 = first_pair(tr)
    with gr.Row(equal_height=True, elem_id="compare_row"):
        a = gr.Textbox(a0, label=label("sentence_a"), show_label=False, container=False,
                       placeholder=label(f"sentence_a_{tr.config.src_lang}"), elem_id="compare_a",
                       max_length=2000, scale=4, min_width=200)
        b = gr.Textbox(b0, label=label("sentence_b"), show_label=False, container=False,
                       placeholder=label(f"sentence_b_{tr.config.src_lang}"), elem_id="compare_b",
                       max_length=2000, scale=4, min_width=200)
        pairs = gr.Dropdown(pair_choices(tr), value="", label=label("example_pairs"), show_label=False, container=False,
                            elem_id="compare_pairs", scale=3, min_width=200, filterable=False)
        go = gr.Button(label("start_both"), variant="primary", elem_id="compare_start", scale=0, min_width=150)
    note = box_note(ctx, "compare_note", ["compare_a", "compare_b"])  # under the boxes: why Start both started nothing
    view = gr.HTML(None, html_template=TEMPLATE, css_template=asset("compare/compare.css"),
                   js_on_load=asset("compare/compare.js"),
                   elem_id="compare", default_model=models.default,  # the model the page opens with and its first
                   default_pair=quote(json.dumps([a0, b0])))  # pair (URL-quoted: safe in an attribute)

    def on_start(ta, tb, kk, key=""):  # a sentence the model cannot read: said under the boxes, nothing else
        tr_, sent = models.get(key), {"compare_a": ta, "compare_b": tb}
        for which, given in (("Sentence A", ta), ("Sentence B", tb)):
            if problem := source_problem(tr_, given):
                return {note: box_note_value(sent, f"{which}: {problem}")}
        return {view: start_both(models, ta, tb, kk, key), note: box_note_value(sent)}

    go.click(on_start, [a, b, ctx.k, ctx.model], [view, note], show_progress_on=[view], api_visibility="private",
             **CONC)

    def on_pick(v, ta, tb, kk, key=""):  # an example pair starts at once, as Translate's examples do
        return on_start(ta, tb, kk, key) if v else gr.skip()

    pairs.input(None, [pairs, a, b], [a, b, note],
                js="(v, a, b) => { try { const p = JSON.parse(v); return [p[0], p[1], '']; } "
                   "catch (e) { return [a, b, '']; } }").then(
        on_pick, [pairs, a, b, ctx.k, ctx.model], [view, note], show_progress_on=[view], api_visibility="private",
        **CONC)

    def on_model(key):  # another model: its example pairs, the first in the boxes, the view cleared and marked as
        m = models.get(key)  # drawn for `key`: a link's pair is typed only after this (assets/compare/compare.js ready)
        a1, b1 = first_pair(m)
        return {a: gr.update(value=a1, placeholder=label(f"sentence_a_{m.config.src_lang}")),
                b: gr.update(value=b1, placeholder=label(f"sentence_b_{m.config.src_lang}")),
                pairs: gr.update(choices=pair_choices(m), value=""),
                view: {"for": key, "pair": [a1, b1]}, about: intro(m)}  # pair: a link's default

    ctx.model.change(on_model, [ctx.model], [a, b, pairs, view, about], api_visibility="private",
                     show_progress="hidden", **CONC)
