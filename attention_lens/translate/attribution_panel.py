"""ALTI+ and saliency in the Translate view (assets/translate/attribution.js, attribution.css): two more choices in the
map's colour toggle, colouring the pieces and drawing the measure of every step. A hidden gr.HTML holds the browser side
and its one event: the browser asks once per trajectory and method (attention_lens/translate/attribution.py
attribution_at); stepping asks nothing."""
from __future__ import annotations

import gradio as gr

from attention_lens.shell.components import FAST, Ctx, asset
from attention_lens.shell.models import of_session
from attention_lens.translate import attribution as attribution_views


def panel(ctx: Ctx) -> gr.HTML:
    """The hidden component (elem_id "attribution"); its parts are placed inside the view (#attention)."""
    return gr.HTML(None, html_template="", js_on_load=asset("translate/attribution.js"), elem_id="attribution",
                   visible="hidden", head=f"<style>{asset('translate/attribution.css')}</style>")


def answer(session, data) -> dict:
    """The payload for the view's request `data` ({method, position: the trajectory's last position, key}), or
    {"error", "key"}, which the view says in place of the map (a toast alone would leave it waiting)."""
    data = data if isinstance(data, dict) else {}
    key = data.get("key") if isinstance(data.get("key"), str) else ""
    try:  # of_session: the model the sentence was started with
        return of_session(attribution_views.attribution_at)(session, data.get("position"), data.get("method"), key)
    except gr.Error as e:
        return {"error": e.message, "key": key[:200]}


def wire(view: gr.HTML, state: gr.State) -> None:
    """The view fires "click" with its request; the answer goes back to the view (`answer`)."""
    def on_ask(session, evt: gr.EventData):
        return {view: answer(session, (evt._data or {}) if evt is not None else {})}

    view.click(on_ask, [state], [view], api_visibility="private", **FAST)
