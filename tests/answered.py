"""A page event's answer read as Gradio reads it: a handler answers {component: value} (a component it leaves out is
left as it is: gr.skip()), or a list or tuple in the order of its outputs (the endpoints for programs)."""
from __future__ import annotations

import gradio as gr
from gradio.blocks import convert_component_dict_to_list


def event(demo, elem_id, trigger="click"):
    """The page's event of the component `elem_id` (one event of that trigger)."""
    block = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id)
    [found] = [f for f in demo.fns.values() if (block._id, trigger) in [(t[0], t[1]) for t in f.targets]]
    return found


def in_order(f, answer) -> list:
    """The answer of event `f` laid on its outputs, one value each, as Gradio lays it (blocks.py postprocess_data):
    a {component: value} answer with a component that is not among the outputs raises, as it does in Gradio."""
    n = len(f.outputs)
    if isinstance(answer, dict) and answer == gr.skip() and n > 1:
        return [gr.skip()] * n
    if isinstance(answer, dict) and answer and all(isinstance(k, gr.blocks.Block) for k in answer):
        out = convert_component_dict_to_list(list(f.outputs), answer)
        return [out] if n == 1 else list(out)
    return [answer] if n == 1 else list(answer)


def by_name(f, answer) -> dict:
    """The answer as {elem_id, else label: value} of every output (gr.skip() for those it leaves)."""
    return {o.elem_id or getattr(o, "label", None) or o: v for o, v in zip(f.outputs, in_order(f, answer), strict=True)}
