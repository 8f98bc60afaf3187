"""The "Inside this head" panel of the Translate tab (assets/translate/inside.html, inside.js, inside.css): one head of
the map opened up for one query row, and the map's weight / contribution toggle. The browser asks for a head's
payload (attention_lens/translate/inside_payload.py, decoded by assets/shell/payload.js) once per head and trajectory;
stepping asks nothing."""
from __future__ import annotations

import re

import gradio as gr

from attention_lens.shell.components import FAST, Ctx, asset, script
from attention_lens.shell.inputs import need_session
from attention_lens.translate import handlers as decoding_views

INSIDE_PARTS = ("shell/payload.js",)  # the panel's script's parts (translate/inside.js mounts them): the decoders


def panel(ctx: Ctx) -> gr.HTML:
    """The panel (elem_id "inside") and its one event: the view fires "click" with {kind, layer, head, position}
    (the trajectory's last position) and the answer is the head's payload."""
    # the catalogue's texts are filled in by assets/shell/explain.js apply() (data-text: the language and mode shown)
    # from the catalogue the page's bundle holds once (attention_lens/shell/first_load.py), not put in the config in
    # every language and mode
    template = re.sub(r"<!--text:([\w.]+)-->", r'<span data-text="\1"></span>', asset("translate/inside.html"))
    view = gr.HTML(None, html_template=template, css_template=asset("translate/inside.css"),
                   js_on_load=script("translate/inside.js", *INSIDE_PARTS), elem_id="inside")

    def on_open(session, evt: gr.EventData):
        data = (evt._data or {}) if evt is not None else {}
        if not isinstance(data, dict):
            data = {}
        try:
            tr = need_session(session).translator  # the model the sentence was started with
            return {view: decoding_views.inside_at(tr, session, data.get("position"), data.get("kind"),
                                                   data.get("layer"), data.get("head"))}
        except gr.Error as e:  # said in the panel, which offers to try again (a toast alone leaves it waiting)
            return {view: {"error": e.message,
                           "request": {k: data.get(k) for k in ("kind", "layer", "head", "position")}}}

    view.click(on_open, [ctx.state], [view], api_visibility="private", **FAST)
    return view
