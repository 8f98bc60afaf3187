"""The Gradio app: the page, its tabs (each wires its own events) and the API-only endpoints."""
from __future__ import annotations

import importlib.util
import sys

import gradio as gr

from attention_lens.ablation import tab as ablation_tab
from attention_lens.atlas import tab as atlas_tab
from attention_lens.beam import tab as beam_tab
from attention_lens.compare import tab as compare_tab
from attention_lens.layers import tab as layers_tab
from attention_lens.learned import tab as learned_tab
from attention_lens.live import page as live
from attention_lens.model import tab as model_tab
from attention_lens.shell import exports, first_load, held, link, requests, texts
from attention_lens.shell.api import api_attention, api_attention_compact, api_attribution, api_inside, api_translate
from attention_lens.shell.components import (
    BATCH_ROWS,
    BATCH_WINDOW_S,
    BATCHING,
    CONC,
    CONCURRENCY,
    DECODE,
    QUEUE_MAX,
    QUEUE_STATUS_S,
    SESSION_TTL_S,
    VENDOR,
    Ctx,
    asset,
)
from attention_lens.shell.models import Models, name_suffix
from attention_lens.translate import tab as translate_tab
from transformer.decode.decoding import Translator

# gr.HTML, not gr.Markdown: no Markdown on the first screen spares its code (7 files) until a Markdown is shown
TABS = ["Translate", "Compare", "Head ablation", "Beam search", "Across layers", "Head atlas",
        "Attention being learned", "Model"]
TAB_KEYS = ("translate", "compare", "ablation", "beam", "layers", "atlas", "learned", "model")  # as links name them
TAB_LABELS = {name: texts.label(f"tab_{key}") for name, key in zip(TABS, TAB_KEYS)}  # in the page's language (gr.I18n)
TITLE = f"<h1><strong>attention-lens</strong> · {texts.both('title')}</h1>"  # the page's one heading (axe)
INTRO = texts.explained("howto", "look_for.title", "look_for.en-de")  # How to use it, both versions


# the help under the intro row: its button opens and closes it (a js-only event: no request)
HOWTO_JS = ("() => { const b = document.getElementById('howto_body'), open = !b || b.offsetParent === null; "
            "const h = document.getElementById('howto'); if (h) h.setAttribute('aria-expanded', String(open)); "
            "return {__type__: 'update', visible: open}; }")


# the model picked, for the page's scripts (assets/shell/link.js picked), kept on the picker's own element (its
# data-picked): a gr.Dropdown shows its choice's label, not its value
PICKED_JS = "(v) => { const m = document.getElementById('model'); if (m) m.dataset.picked = v; }"


def build_demo(translators) -> gr.Blocks:
    """The page for one Translator or several (a list: the first is the default; the picker offers each)."""
    models = Models([translators] if isinstance(translators, Translator) else list(translators))
    tr = models.first
    gr.set_static_paths([str(VENDOR)])
    plotly_src = f"/gradio_api/file={VENDOR}/plotly-cartesian.min.js"  # loaded by lens.js to export a figure
    page = first_load.Page()  # what the first page load leaves for later (attention_lens/shell/first_load.py)
    with gr.Blocks(title="attention-lens", delete_cache=(3600, 3600)) as demo:
        with gr.Row(elem_id="intro", equal_height=True):  # one line: the Translate view must fit a laptop screen
            gr.HTML(TITLE, elem_id="title", padding=False)
            # the picker: 160 px wide (assets/translate/layout.css)
            picker = gr.Dropdown(shown_choices(models), value=models.default, elem_id="model", min_width=160,
                                 label=texts.label("model_picker"), show_label=False, container=False,
                                 interactive=len(models) > 1, scale=0)  # its label: the box's aria-label
            tools = link.tools(models)  # ▶ Tour (assets/shell/tour.js) and Copy link (assets/shell/link.js)
            live.build()  # Teach live, the class's panel and bar, /follow (attention_lens/live/page.py, live/live.js)
            texts.explain_box()  # Explain: simply | in detail (assets/shell/explain.js)
            howto = gr.Button(texts.label("howto"), elem_id="howto", size="sm", scale=0, min_width=0)
        # under the intro row, pushing the page down: never over; a help text that closes as a reader leaves it
        # (Esc, a click outside it, a change of tab: assets/shell/help.js)
        with gr.Column(visible=False, elem_id="howto_body") as howto_body:
            gr.Markdown(INTRO)  # how to use it, and what to look for
        picker.change(None, [picker], None, js=PICKED_JS, show_progress="hidden", queue=False)
        howto.click(None, None, [howto_body], js=HOWTO_JS, show_progress="hidden", queue=False)
        # its first opening loads what it shows (attention_lens/shell/first_load.py gates)
        howto_body.opener = howto.click
        gr.HTML("", html_template="", js_on_load=asset("shell/help.js"), visible="hidden", elem_id="help_closer")
        gr.HTML("", html_template="", js_on_load=asset("shell/tab_keys.js"), visible="hidden", elem_id="tab_keys")
        tools.note = link.note()  # what a link ignored, or the link copied (hidden when empty)
        ctx = Ctx(tr, gr.State(None, time_to_live=SESSION_TTL_S), asset("shell/lens.css"), plotly_src, models=models,
                  model=picker)
        followers = []  # (tab, outputs, content(translator)): tabs whose content is the model's own, one set of
        # components for every model, filled when opened and when the model is picked (no copy per model)
        with gr.Tabs(elem_id="tabs", overflow_behavior="wrap"):  # every tab in sight on a phone too
            with gr.Tab(TAB_LABELS["Translate"], id="translate", elem_id="tab_translate"):
                translate_tab.build(ctx)
            with gr.Tab(TAB_LABELS["Compare"], id="compare", elem_id="tab_compare"):
                compare_tab.build(ctx)
            with gr.Tab(TAB_LABELS["Head ablation"], id="ablation", elem_id="tab_ablation"):
                ablation_tab.build(ctx)
            with gr.Tab(TAB_LABELS["Beam search"], id="beam", elem_id="tab_beam"):
                beam_tab.build(ctx)
            with gr.Tab(TAB_LABELS["Across layers"], id="layers", elem_id="tab_layers") as tab_layers:
                layers_tab.build(ctx, tab_layers)
            with gr.Tab(TAB_LABELS["Head atlas"], id="atlas", elem_id="tab_atlas") as tab_atlas:
                followers.append((tab_atlas, *atlas_tab.build(ctx)))
            with gr.Tab(TAB_LABELS["Attention being learned"], id="learned", elem_id="tab_learned") as tab_learned:
                followers.append((tab_learned, *learned_tab.build(ctx)))
            with gr.Tab(TAB_LABELS["Model"], id="model", elem_id="tab_model") as tab_model:
                followers.append((tab_model, *model_tab.build(ctx)))
        for tab, outputs, content in followers:  # filled with the user's model once opened
            page.when_opened(tab, lambda key, content=content: content(models.get(key)), [picker], outputs)
        translate_tab.wire_model(ctx, [(o, c) for _, o, c in followers])
        link.wire(ctx, tools)
        api(models)
        demo.unload(exports.end_session)  # the user closed the page: their exports go
        demo.unload(live.unloaded)  # and their streams of a live class (the count follows)
        page.finish(demo)  # one script for the views; what the first screen does not show waits to be opened
    # decodings of one model that arrive together run in one batch (attention_lens/shell/components.py)
    for _, t in models:
        t.batcher.configure(BATCHING, BATCH_WINDOW_S, BATCH_ROWS)
    demo.queue(status_update_rate=QUEUE_STATUS_S, max_size=QUEUE_MAX, default_concurrency_limit=CONCURRENCY)
    skip_absent_matplotlib()
    held.keep(demo, ctx.state)  # the started sentences within the server's byte budget (attention_lens/shell/held.py)
    requests.guard(demo)  # every request's values checked before any handler runs (attention_lens/shell/requests.py)
    with_labels(demo)
    return demo


def shown_choices(models: Models) -> list[tuple[str, str]]:
    """The model picker's options, 'German → English' in the page's language (one gr.I18n marker each: Gradio
    translates a marker only where the string starts with it); a pair the catalogue does not name keeps its label."""
    w = texts.labels()
    return [(texts.label(f"direction_{tr.config.src_lang}_{tr.config.tgt_lang}") + name_suffix(tr)
             if f"direction_{tr.config.src_lang}_{tr.config.tgt_lang}" in w else label, key)
            for (key, tr), (label, _) in zip(models, models.choices())]


def skip_absent_matplotlib() -> None:
    """Gradio imports matplotlib around every event it runs (to switch its backend, utils.MatplotlibBackendMananger);
    where matplotlib is not installed, each attempt searches sys.path again, on the event loop (py-spy, a burst of
    60 Starts, 2026-12-03: 4 % of the event loop's samples). Marked absent in sys.modules, the import fails at once."""
    if "matplotlib" not in sys.modules and importlib.util.find_spec("matplotlib") is None:
        sys.modules["matplotlib"] = None


def with_labels(demo: gr.Blocks) -> None:
    """The page's component labels in each language of the catalogue (attention_lens/shell/texts.py I18N) and the page's
    head (the
    views' bundle, loaded as the page starts: attention_lens/shell/first_load.py): Gradio takes both at launch only, so
    every launch
    of this page gets them (labels: unless it brings its own; a head it brings comes after the bundle's)."""
    launch, head = demo.launch, first_load.head_tag(demo)

    def launch_with_labels(*args, **kw):
        kw.setdefault("i18n", texts.I18N)
        kw["head"] = head + (kw.get("head") or "")
        return launch(*args, **kw)
    demo.launch = launch_with_labels


def api(models: Models) -> None:
    """Endpoints for programs (gradio_client), with no component on the page. `model`: "de-en", "en-de", ...
    (default: the first served)."""

    def translate(text: str, model: str = "") -> str:
        """Text in the model's source language -> its translation (greedy)."""
        return api_translate(models.get(model), text)

    def attention(text: str, model: str = "") -> dict:
        """Text -> source/target pieces, translation and all three attention maps as nested lists."""
        return api_attention(models.get(model), text)

    def attention_compact(text: str, model: str = "") -> dict:
        """Text -> pieces, translation and the three maps as base64 uint16 (weight = value / 65535)."""
        return api_attention_compact(models.get(model), text)

    def inside(text: str, kind: str, layer: int, head: int, step: int | None = None, model: str = "") -> dict:
        """Text -> inside one head (0-based layer, head) at a step (None: the last) of its greedy
        decoding: q, k, v, scores, mask, weights, out, contribution as nested lists (bounded)."""
        return api_inside(models.get(model), text, kind, layer, head, step)

    gr.api(translate, api_name="translate", **CONC)
    gr.api(attention, api_name="attention", **DECODE)
    gr.api(attention_compact, api_name="attention_compact", **DECODE)
    gr.api(inside, api_name="inside", **DECODE)

    def attribution(text: str, method: str = "alti", model: str = "") -> dict:
        """Text -> where each piece of its greedy translation comes from: method "alti" (ALTI+), "saliency" or
        "attention"; rows source + target sum to 1; at most 60 rows x (200 source + 60 target), 4 decimals."""
        return api_attribution(models.get(model), text, method)

    gr.api(attribution, api_name="attribution", **DECODE)
