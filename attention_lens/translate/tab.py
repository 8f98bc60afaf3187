"""The Translate tab: step-through greedy decoding with the attention view and the top-k list.

Start decodes the whole sentence and sends every step at once; Step / Back / Run / Reset / Go, the k slider
and the word toggle then act in the browser (js-only events: fn=None, no request). The server-side stepping
endpoints stay for gradio_client users (/step /run /back /reset /goto /topk), on hidden buttons.
"""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from attention_lens.shell import exports, page_state
from attention_lens.shell.components import (
    CONC,
    DECODE,
    FAST,
    Ctx,
    api_only,
    asset,
    box_note,
    box_note_value,
    lens_view,
    live_position,
    started_sentence,
)
from attention_lens.shell.inputs import TOPK, need_session, reference_problem, source_problem
from attention_lens.shell.models import of_session
from attention_lens.shell.texts import both, label, labels, page_lang, said
from attention_lens.shell.texts import words as said_words
from attention_lens.translate import arch, attribution_panel, inside_panel
from attention_lens.translate import handlers as decoding_views
from transformer.decode.language import hint as language_hint
from transformer.train.data import examples_path, read_glossed_examples

PICK = label("examples_pick")  # "Examples: pick a sentence…" in the page's language (gr.I18n)
VIEW = 'document.getElementById("attention")?.lens?.ctl'  # the view's controls, on its element (assets/shell/lens.js)


def local(call: str) -> str:
    """A js-only event body calling the Translate view's controls (assets/shell/lens_player.js `ctl`)."""
    return f"(...a) => {{ const c = {VIEW}; if (c) c.{call}; }}"


def build(ctx: Ctx) -> None:
    """Components and their events; sets ctx.source, ctx.k, ctx.words, ctx.view for the other tabs (and
    ctx.translate: the components wire_model reaches)."""
    c = controls(ctx)
    wire_browser(c)
    wire_server(ctx, c)
    wire_hint(ctx, c)
    ctx.source, ctx.k, ctx.words, ctx.view = c.source, c.k, c.words, c.bus
    ctx.translate = c


def wire_hint(ctx: Ctx, c: SimpleNamespace) -> None:
    """The other language noticed: while the box holds a sentence that looks like another language than the
    model's (or that it can barely read), a line beside the box says so, before and after Start; it advises and
    never blocks."""
    def show(text, key):
        message, other = hint_for(ctx.models, key, text)
        button = f"Translate it {ctx.models.label(other)} ▶" if other else ""
        return {c.language_row: gr.update(visible=bool(message)),
                c.language_note: gr.update(value=message, visible=bool(message)),
                c.language_switch: gr.update(visible=other is not None, value=button)}

    # Off the queue (its own request, no model: the tokenizer alone): a queued event answered just before a Start
    # joins closes the page's stream of answers (Gradio's close_stream), and when the page reads that close after
    # the Start's join was answered, Gradio's client opens no new stream and the Start's answer never comes (a Start
    # lost, tests/test_start_after_typing_browser.py). Every typed or pasted sentence fires this just before Start.
    outs = [c.language_row, c.language_note, c.language_switch]
    c.source.change(show, [c.source, ctx.model], outs, api_visibility="private", trigger_mode="always_last",
                    show_progress="hidden", queue=False)
    ctx.model.change(show, [c.source, ctx.model], outs, api_visibility="private", show_progress="hidden",
                     queue=False)


def controls(ctx: Ctx) -> SimpleNamespace:
    """The tab's components, laid out for a laptop screen: at 1280x800 the step controls, the big map and the
    inside panel's table are visible without scrolling (tests/test_glitches_browser.py). One row for the
    sentence, the examples and the buttons; below it two columns: the top-k list (a strip) over the view, and the
    translation so far over the inside panel and the architecture strip; then the settings and the rarer tools.
    Returned by name."""
    c = sentence_row(ctx)
    with gr.Row(elem_id="translate_main"):
        with gr.Column(scale=1, min_width=440):
            c.topk = gr.HTML(None, html_template=f'<div class="topk-row"><span class="topk-head"><b>{both("topk_head")}'
                             f'</b> {both("topk_force")}</span><div class="topk-list"></div></div>'
                             '<div class="topk-note"></div>',
                             css_template=ctx.css, js_on_load=asset("translate/topk.js"), elem_id="topk")
            c.attention = lens_view(ctx, "attention")
        with gr.Column(scale=1, min_width=440):
            # the translation being written, beside the map that writes it, on the first screen; on a phone right
            # under the box (assets/translate/layout.css)
            c.translation = gr.Textbox(label=label("translation_so_far"), elem_id="translation", interactive=False,
                                       lines=1, max_lines=3)
            c.inside = inside_panel.panel(ctx)  # "Inside this head" (assets/translate/inside.js): one head opened up
            arch.strip(ctx)  # the model's layers, the map shown highlighted (assets/translate/arch.js)
            c.attribution = attribution_panel.panel(ctx)  # ALTI+ / saliency on the map (translate/attribution.js)
    with gr.Row(elem_id="translate_tools"):
        tools(ctx, c)
    hidden_parts(ctx, c)
    return c


def sentence_row(ctx: Ctx) -> SimpleNamespace:
    """The sentence, the examples (a picker) and the five buttons in one row; a hint under it while the box
    holds a sentence that was not started (assets/shell/sentence.js)."""
    words = language_words(ctx.tr)
    with gr.Row(equal_height=True, elem_id="sentence_row"):
        source = gr.Textbox(label=words["label"], show_label=False, container=False, elem_id="source", lines=1,
                            max_lines=4, max_length=2000, scale=6, min_width=280, placeholder=words["placeholder"])
        # from the box, Tab then Enter reaches the map or the inside panel (shown when focused)
        skip = gr.HTML(SKIP, elem_id="skip", js_on_load=SKIP_JS, padding=False, apply_default_css=False)
        examples = gr.Dropdown(words["examples"], value="", elem_id="examples", label=label("examples"),
                               show_label=False, container=False, scale=2, min_width=160)
        b_start = gr.Button(label("start"), elem_id="start", variant="primary", scale=0, min_width=0)
        b_reset = gr.Button(label("reset"), elem_id="reset", scale=0, min_width=0)
        b_back = gr.Button(label("back"), elem_id="back", scale=0, min_width=0)
        b_step = gr.Button(label("step"), elem_id="step", scale=0, min_width=0)
        b_run = gr.Button(label("run"), elem_id="run", scale=0, min_width=0)
    note = started_sentence(ctx, "source_hint", hint=True, head=f"<style>{asset('translate/layout.css')}</style>")
    # what the translation of the sentence started should be read with (transformer.decode.caveats;
    # assets/translate/caveats.js): right under the box, where a Start's answer is first looked for, shown only when
    # there is one
    caveats = gr.HTML(None, html_template=('<div role="status" aria-live="polite">'  # a <ul> keeps its list role
                                           '<ul class="caveats" hidden></ul></div>'),
                      css_template=CAVEATS_CSS, js_on_load=asset("translate/caveats.js"), elem_id="caveats",
                      padding=False)
    with gr.Row(equal_height=True, elem_id="language_row", visible=False) as language_row:
        language_note = gr.HTML("", html_template="<p>{{value}}</p>", elem_id="language_hint", visible=False,
                                padding=False)
        language_switch = gr.Button("", elem_id="language_switch", size="sm", scale=0)
    return SimpleNamespace(**{name: value for name, value in locals().items() if name != "ctx"})


SKIP = ('<nav class="al-skip" data-label="label.skip_nav" aria-label="skip to a part of the view">'
        f'<a href="#attention" data-to="#attention .lens">{both("skip_map")}</a><a href="#inside" '
        f'data-to="#inside .inside-fold">{both("skip_inside")}</a></nav>')
SKIP_JS = ("element.addEventListener('click', (e) => { const a = e.target.closest('a[data-to]'), "
           "t = a && document.querySelector(a.dataset.to); if (!t) return; e.preventDefault(); "
           "t.focus({preventScroll: true}); scrollTo({top: scrollY + t.getBoundingClientRect().top - 8}); });")


def language_words(tr) -> dict:
    """The Translate tab's words for a model: the box's label and placeholder, the examples (each with its
    translation as a gloss) and the reference box's label, in the model's languages."""
    # the words: the page's language (gr.I18n, attention_lens/shell/texts.py)
    src, tgt = tr.config.src_lang, tr.config.tgt_lang
    glossed = read_glossed_examples(examples_path(src))
    place = f"{label(f'type_{src}_eg')} {glossed[0][0]}" if glossed else label(f"type_{src}")  # one marker each
    return {"label": label(f"sentence_{src}"), "placeholder": place,
            "examples": [(PICK, "")] + [(f"{s}  ·  {g}" if g else s, s) for s, g in glossed],
            "reference": label(f"reference_{tgt}")}


def hint_for(models, key, text) -> tuple[str, str | None]:
    """(what the hint says, the model to switch to or None) for `text` under the user's model: another language
    (switching offered when a served model reads it), or pieces the model can barely read."""
    tr = models.get(key)
    found = language_hint(text if isinstance(text, str) else "", tr.config.src_lang, tr.tokenizer)
    if found is None:
        return "", None
    lang = page_lang()  # the hint in the user's page's language (the library's message is English)
    w, src = labels(lang), tr.config.src_lang
    said_ = found["message"] if lang == "en" else w[f"hint_{found['kind']}"].format(
        name=w.get(f"lang_{found.get('code')}", found.get("name", "")), src=w[f"lang_{src}"],
        pct=f"{100 * found.get('share', 0):.0f}")
    if found["kind"] == "language":
        other = models.of_language(found["code"])
        if other is not None:
            switch = w["hint_switch"].format(src=w[f"lang_{src}"], model=model_words(models, other, lang))
            return f"⚠ {said_} " + switch, other
    return f"⚠ {said_}", None


def model_words(models, key, lang: str) -> str:
    """'German → English' in `lang`."""
    c, w = models.get(key).config, labels(lang)
    return f"{w.get('lang_' + c.src_lang, c.src_lang)} → {w.get('lang_' + c.tgt_lang, c.tgt_lang)}"


CAVEATS_CSS = (".caveats { margin: 0; padding: 6px 10px; list-style: none; border-left: 3px solid #b45309; "
               "background: #fffbeb; color: #713f12; font-size: 0.9em; } .caveats li + li { margin-top: 4px; }")


def tools(ctx: Ctx, c: SimpleNamespace) -> None:
    """Under the view, folded: the top-k size and the word toggle, a reference translation, going to a step,
    export."""
    with gr.Column(scale=2, min_width=300, elem_id="translate_folds"):
        with gr.Accordion(label("settings"), open=False, elem_id="settings"):
            c.k = gr.Slider(1, 20, value=TOPK, step=1, label=label("k"), elem_id="k")
            c.words = gr.Checkbox(False, label=label("words"), elem_id="words", info=label("words_info"))
        with gr.Accordion(label("reference_fold"), open=False, elem_id="reference_fold"):
            c.ref = gr.Textbox(label=language_words(ctx.tr)["reference"], elem_id="reference", lines=2,
                               max_length=2000)
            c.b_ref = gr.Button(label("show_reference"), elem_id="show_reference")
            c.ref_note = box_note(ctx, "reference_note", ["reference"])  # why a reference was not shown
        with gr.Accordion(label("goto_fold"), open=False, elem_id="goto_fold"):
            c.step_no = gr.Number(0, precision=None, step=1, label=label("goto_index"), elem_id="goto_index")
            c.b_goto = gr.Button(label("go"), elem_id="goto")
        with gr.Accordion(label("export_fold"), open=False, elem_id="export_fold"):
            c.b_export = gr.Button(label("export"), elem_id="export")
            c.export_note = box_note(ctx, "export_note", [])  # why Export gave nothing (no sentence started)
            # drawn for the sentence it exported (attention_lens/shell/page_state.py)
            with page_state.results() as c.files_box:
                c.files = gr.File(label=label("files"), file_count="multiple", elem_id="export_files")


def hidden_parts(ctx: Ctx, c: SimpleNamespace) -> None:
    """Components the page never shows: the API's server-side stepping, the forcing endpoint, a no-op round trip,
    the view's event bus (also the input that carries the position the view shows: `live_position`)."""
    c.piece_in = gr.Textbox(visible=False)
    # the endpoints for programs only (gradio_client: /start /step ... /force, and the other tabs' /ablate /beam):
    # one hidden button the page never clicks carries them all (a client calls an endpoint by its name, not by
    # its trigger), since every component costs the page's first load its share of Gradio's work
    c.b_force = api_only(ctx)
    c.api = {name: c.b_force for name in ("start", "step", "run", "back", "reset", "goto", "topk", "reference",
                                          "export")}
    c.noop = gr.Button("no-op", elem_id="noop", visible="hidden")  # a Gradio round trip, for benchmarks.ui
    # the view's events fire on this empty component: an event fired on the view itself costs a copy of its
    # payload (megabytes for a long sentence) on every step. As an input of another tab's event it stands for the
    # view: that event's js puts the position the view shows in its place (components.live_position), so the
    # browser, which owns the step shown, sends it with the request and no box relays it
    c.bus = gr.HTML("", html_template="", js_on_load="element.closest('#lens_bus').bus = trigger;", visible="hidden",
                    elem_id="lens_bus")
    c.glossary = gr.HTML("", html_template="", js_on_load=asset("shell/glossary.js"), visible="hidden",
                         elem_id="glossary")  # the words' meanings where they appear (assets/shell/glossary.js)


def wire_browser(c: SimpleNamespace) -> None:
    """Events that act in the browser alone (js-only, no request): the view moves, then fires its input event."""
    c.b_step.click(None, js=local("step()"))
    c.b_run.click(None, js=local("run()"))
    c.b_back.click(None, js=local("back()"))
    c.b_reset.click(None, js=local("reset()"))
    c.b_goto.click(None, [c.step_no], js=local("goto(a[0])"))
    c.k.input(None, [c.k], js=local("setK(a[0])"))
    c.words.input(None, [c.words], js=local("setWords(a[0])"))
    # the translation so far, from the view (its element's lens)
    c.bus.input(None, None, [c.translation], js='() => document.getElementById("attention").lens.sync()')
    # the box's text, for the hint and every tab's name of the started sentence (assets/shell/sentence.js)
    c.source.change(None, [c.source], None, js="(v) => { const s = document.getElementById('source_hint')?.sentence; "
                                                  "if (s) s.setBox(v); }")


def wire_model(ctx: Ctx, followers: list) -> None:
    """The picker: the user's choice of model (its value lives in their page). Picking one clears the views,
    says which model is now in use, and puts the tabs' words, examples and model-specific content in its
    languages; the hint's button switches to the model of the sentence's language and starts it. `followers`:
    (outputs, content(translator) -> {output: value}) of the tabs whose content is the model's own."""
    c, models, page = ctx.translate, ctx.models, ctx.page
    cleared = [ctx.state, c.translation, c.attention, c.started]  # the top-k follows the view (assets/shell/lens.js)
    words_out = [c.source, c.ref, c.examples]
    groups = [o for outputs, _ in followers for o in outputs]
    busy = {"show_progress_on": cleared[1:3] + groups}  # no spinner over the boxes being relabelled

    def model_parts(key, text=None) -> dict:
        tr = models.get(key)
        w = language_words(tr)
        source = {"label": w["label"], "placeholder": w["placeholder"]} | ({} if text is None else {"value": text})
        out = {c.source: gr.update(**source), c.ref: gr.update(label=w["reference"]),
               c.examples: gr.update(choices=w["examples"], value="")}
        for _, content in followers:
            out.update(content(tr))
        return out
    # a link's model sets these too (attention_lens/shell/link.py)
    ctx.model_outputs = (words_out + groups, model_parts)

    def picked(key, again=""):  # a new start with no sentence: a new mark, so no tab draws the old one's results
        if again == AGAIN:  # the second input event of one mouse pick (ONE_PICK): answered by the first
            return gr.skip()
        lang = page_lang()  # the toast in the user's page's language
        gr.Info(said("now_using", lang, model=model_words(models, key, lang),
                     src=labels(lang)[f"lang_{models.get(key).config.src_lang}"]))
        return page_state.written(page) | {c.note: box_note_value({})} | model_parts(key)

    # (the note under the box: what a Start refused said of the other model's reading, gone)
    ctx.model.input(picked, [ctx.model, c.started], cleared + [c.note] + words_out + groups, js=ONE_PICK,
                    api_visibility="private", **busy, **CONC)

    def switch(text, kk, ww, key):
        _, other = hint_for(models, key, text)
        other = other or key
        started = decoding_views.for_page(decoding_views.start(models.get(other), text, kk, ww))
        return page_state.written(page, started, model=other) | model_parts(other)

    c.language_switch.click(switch, [c.source, c.k, c.words, ctx.model], [ctx.model] + cleared + words_out + groups,
                            api_visibility="private", **busy, **CONC)


# Gradio 6.31 fires a gr.Dropdown's input event twice for one pick made with the mouse (once by the keyboard), in the
# same moment, so the switch's notice showed twice ("Info (2)"). The picker's event (its js, in the browser) passes
# AGAIN in place of the mark for an input of the same model within 300 ms of the one before, and `picked` answers that
# with nothing. tests/test_gradio_behaviour_browser.py fails the day Gradio fires it once.
AGAIN = "again"
ONE_PICK = ("(key, mark) => { const m = document.getElementById('model'), now = performance.now(); "
            "if (!m) return [key, mark]; const again = m.dataset.inputKey === key && now - (+m.dataset.inputAt) < 300; "
            f"m.dataset.inputKey = key; m.dataset.inputAt = String(now); return [key, again ? '{AGAIN}' : mark]; }}")


def wire_server(ctx: Ctx, c: SimpleNamespace) -> None:
    """Events that reach the server: Start, forcing a piece, the reference, export, and for programs the
    server-side stepping of the session as before (/step /run /back /reset /goto /topk)."""
    models, state, source, k, words, api, model = ctx.models, ctx.state, c.source, c.k, c.words, c.api, ctx.model
    outs = [state, c.translation, c.attention, c.topk]  # the programs' answer (handlers.trajectory_outputs)
    page = outs[:3]  # the page's: handlers.for_page (the top-k is drawn from the payload)

    def start(text, kk, ww, key=""):
        return decoding_views.start(models.get(key), text, kk, ww)

    def on_start(text, kk, ww, key=""):  # the page's Start (a name of its own: the API's is /start)
        tr = models.get(key)
        problem = source_problem(tr, text)  # a sentence the model cannot read (an empty box): said under the box,
        if problem:  # and the sentence before ends, as a model's pick ends it: no view shows what the box does not
            return page_state.written(ctx.page) | {c.note: box_note_value({"source": text}, problem)}
        started = decoding_views.for_page(decoding_views.start(tr, text, kk, ww))
        return page_state.written(ctx.page, started) | {c.note: box_note_value({"source": text})}

    # the mark of what is started: new with each sentence started, and with a Start that started nothing (the old
    # decoding would stay under "input is empty"); every tab's results are drawn for the mark they were computed for
    # alone (attention_lens/shell/page_state.py)
    c.started = page_state.mark(ctx, c.translation, c.attention)
    quiet = dict(api_visibility="private", show_progress_on=page, **DECODE)  # no spinner on the note under the box
    c.b_start.click(on_start, [source, k, words, model], page + [c.note, c.started], **quiet)
    source.submit(on_start, [source, k, words, model], page + [c.note, c.started], **quiet)
    # the API's /start: a bad sentence or top-k is answered by the handler with its reason; the model comes last,
    # optional
    api["start"].click(start, [source, k, words, model], outs, api_name="start", **DECODE)  # Start: batched decoding

    def on_example(example, kk, ww, key=""):  # picking an example puts it in the box and starts it
        if not example:  # the picker's first line ("pick a sentence…"): nothing changes
            return gr.skip()
        started = decoding_views.for_page(decoding_views.start(models.get(key), example, kk, ww))
        return page_state.written(ctx.page, started) | {source: gr.update(value=example),
                                                        c.note: box_note_value({"source": example})}

    c.examples.input(on_example, [c.examples, k, words, model], [source] + page + [c.note, c.started],
                     api_visibility="private", show_progress_on=page, **DECODE)
    # every other event reads the started sentence, which carries its model (attention_lens/shell/models.py of_session)
    api["step"].click(of_session(decoding_views.step), [state, k, words], outs, api_name="step", **FAST)
    api["run"].click(of_session(decoding_views.run), [state, k, words], outs, api_name="run", **FAST)
    api["back"].click(of_session(decoding_views.back), [state, k, words], outs, api_name="back", **FAST)
    api["reset"].click(of_session(decoding_views.reset), [state, k, words], outs, api_name="reset", **FAST)
    api["goto"].click(of_session(decoding_views.goto), [state, c.step_no, k, words], outs, api_name="goto", **FAST)
    api["topk"].click(of_session(decoding_views.step_view), [state, k, words], outs, api_name="topk", **CONC)

    def on_force(session, kk, ww, evt: gr.EventData):  # the same sentence, a piece forced: the mark stays
        data = (evt._data or {}) if evt is not None else {}
        answer = decoding_views.force_at(need_session(session).translator, session, data.get("position"),
                                         data.get("piece"), kk, ww)
        session, translation, payload = decoding_views.for_page(answer)
        return {state: session, c.translation: translation, c.attention: payload}

    c.topk.click(on_force, [state, k, words], page, api_visibility="private", **FAST)
    c.b_force.click(of_session(decoding_views.force), [state, c.piece_in, k, words], outs, api_name="force", **CONC)
    # the reference of the started sentence, stepped like a decoding; /reference (text, reference) for programs
    def on_reference(session, ref, kk, ww):  # a reference it cannot show: said under its box, nothing else
        problem = reference_problem(session, ref)
        if problem:
            return {c.ref_note: box_note_value({"reference": ref}, problem)}
        payload, _ = of_session(decoding_views.reference_at)(session, ref, kk, ww)
        return {c.attention: payload, c.ref_note: box_note_value({"reference": ref})}  # the top-k: from the payload

    c.b_ref.click(on_reference, [state, c.ref, k, words], [c.attention, c.ref_note],
                  show_progress_on=[c.attention], api_visibility="private", **CONC)

    def reference(text, ref, key=""):  # /reference (text, reference[, model])
        return decoding_views.reference(models.get(key), text, ref)

    api["reference"].click(reference, [source, c.ref, model], [c.attention, c.topk], api_name="reference", **CONC)
    wire_export(c, state)
    attribution_panel.wire(c.attribution, state)  # one request per trajectory and method (of_session inside)
    c.noop.click(decoding_views.noop, None, None, api_visibility="private", show_progress="hidden").then(
        None, js="() => { const b = document.getElementById('noop'); b.dataset.done = +(b.dataset.done || 0) + 1; }")


def wire_export(c: SimpleNamespace, state: gr.State) -> None:
    """Export the maps at the step the view shows: the page's button (its files drawn for the mark of what is
    started, attention_lens/shell/page_state.py) and /export for programs."""
    export = exports.export_event()

    def on_export(mark, session, position=None, request: gr.Request = None):  # the page's: no sentence: its note
        if not page_state.started(session):
            note = page_state.unstarted("un_export", here=True, words=said_words(page_lang()))
            return {c.export_note: box_note_value({}, note)}
        return {c.files: export(session, position, request), c.export_note: box_note_value({}),
                c.files_box: page_state.drawn_for(mark)}

    c.b_export.click(on_export, [c.started, state, c.bus], [c.files, c.export_note, c.files_box],
                     js=live_position(3, 2), show_progress_on=[c.files], api_visibility="private", **CONC)
    c.api["export"].click(export, [state, c.bus], [c.files], js=live_position(2, 1), api_name="export", **CONC)
