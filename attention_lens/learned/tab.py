"""The Attention being learned tab: cross-attention of example sentences at the points training recorded
(before training, inside epoch 1, after every epoch), with a slider over those points."""
from __future__ import annotations

import gradio as gr

from attention_lens.learned import handlers as learned_handlers
from attention_lens.learned.handlers import epoch_words
from attention_lens.shell.components import CONC, Ctx
from attention_lens.shell.figures import localized_axes
from attention_lens.shell.texts import each, label, labels, page_lang, said, text
from transformer.interpret.capture import layers_of
from transformer.interpret.history import HISTORY, AttentionHistory


def load_history(tr) -> AttentionHistory | None:
    try:
        return AttentionHistory.load(tr.checkpoint_dir / HISTORY) if tr.checkpoint_dir else None
    except (FileNotFoundError, OSError, ValueError, KeyError):
        return None


def times(n: int, lang: str = "en") -> str:
    """'once', 'twice', '5 times' in `lang` (the catalogue's [label] times_1, times_2, times_n)."""
    w = labels(lang)
    return w[f"times_{n}"] if n in (1, 2) else w["times_n"].format(n=n)


def intro(epochs: list) -> str:
    """What the history holds, in words, from the points it recorded (every language and version:
    attention_lens/shell/texts.py)."""
    def said_in(mode, lang):
        parts = ([text("learned.before", mode, lang)] if epochs[0] == 0 else []) \
            + ([text("learned.inside", mode, lang).format(times=times(sum(0 < e < 1 for e in epochs), lang))]
               if any(0 < e < 1 for e in epochs) else []) \
            + ([text("learned.after", mode, lang)] if epochs[-1] >= 1 else [])
        joined = f"{', '.join(parts[:-1])}{labels(lang)['and'] if len(parts) > 1 else ''}{parts[-1]}"
        first, last = (epoch_words(epochs[i], mode, lang) for i in (0, -1))
        return (text("learned.intro", mode, lang).format(parts=joined)
                + (" " + text("learned.late", mode, lang) if epochs[0] >= 1 else "")
                + (" " + said("learned_points", lang, n=len(epochs), first=first, last=last)
                   if len(epochs) > 1 else ""))
    return each(said_in)


MISSING = f"This checkpoint has no attention history (`{HISTORY}`)."


def build(ctx: Ctx) -> tuple[list, object]:
    """One set of controls for every model, filled with the user's model (app.py: when the tab is opened or the
    model picked; the history is read from the checkpoint at each request, 8 ms, so no copy per model stays in
    memory). Returns (outputs, content: a model's {component: value})."""
    intro_md = gr.Markdown("", elem_id="learned_intro")
    with gr.Row():
        example = gr.Dropdown([], value=None, label=label("sentence"), elem_id="learned_example")
        point = gr.Slider(1, 2, value=1, step=1, label=label("snapshot_label"), elem_id="learned_epoch")
        layer = gr.Dropdown(["all layers"], value="all layers", label=label("layer"), elem_id="learned_layer")
        head = gr.Dropdown(["mean of heads"], value="mean of heads", label=label("head"), elem_id="learned_head")
    where = gr.Markdown(elem_id="learned_point")
    text = gr.Textbox(label=label("greedy_now"), interactive=False, elem_id="learned_translation")
    plot = gr.Plot(label=label("cross_attention"), elem_id="learned_plot")
    models = ctx.models

    def content(tr) -> dict:
        """The tab's content for one model: its intro, the controls for its history (sentences, snapshots, layers,
        heads) and the plot, translation and words at its last snapshot; only the intro when it has no history."""
        history = load_history(tr)
        if history is None or not history.epochs:
            return {intro_md: MISSING} | {c: gr.update(visible=False) for c in (example, point, layer, head, plot, text,
                                                                                where)}
        L, H, n = layers_of(tr.model, "cross"), tr.config.n_heads, len(history.epochs)
        fig, said, at = learned_handlers.learned_at(history, 0, n)
        lang = page_lang()  # the dropdowns' words: the user's page's language when the tab was filled
        w = labels(lang)
        return {intro_md: intro(history.epochs),
                example: gr.update(choices=[(t, i) for i, t in enumerate(history.sentences)], value=0, visible=True),
                # the points' count and ends are said in the intro, whose every language is in the page (a slider's
                # info written here would stay in the language of the fill after a switch)
                point: gr.update(minimum=1, maximum=max(2, n), value=n, visible=n > 1),
                layer: gr.update(choices=[(w["all_layers"], "all layers")]
                                 + [(f"{w['layer']} {i + 1}", f"layer {i + 1}") for i in range(L)],
                                 value="all layers", visible=True),
                head: gr.update(choices=[(w["mean_heads"], "mean of heads")]
                                + [(f"{w['head']} {i + 1}", f"head {i + 1}") for i in range(H)],
                                value="mean of heads", visible=True),
                # "keys", "queries" in the user's page's language
                plot: gr.update(value=localized_axes(fig), visible=True), text: gr.update(value=said, visible=True),
                where: gr.update(value=at, visible=True)}

    def show(key, *args):
        fig, told, at = learned_handlers.learned_at(load_history(models.get(key)), *args)
        return {plot: localized_axes(fig), text: told, where: at}

    inputs = [example, point, layer, head]
    # a user's (or a link's) pick: filling the tab sets the controls with its plot, drawn once (.change drew it
    # twice more); a dropdown's pick is one select (its input fires twice), the slider's move one input
    for c, event in ((example, "select"), (point, "input"), (layer, "select"), (head, "select")):
        getattr(c, event)(show, [ctx.model] + inputs, [plot, text, where], api_name=False, **CONC)
    return [intro_md, example, point, layer, head, plot, text, where], content
