"""The app's handlers, one name space for the tab builders, the API and the tests (`from . import handlers as h`).

They are plain functions of (translator, inputs) -> outputs, tested without a browser; they never mutate the
state they are given (they fork it), never touch process-wide state, and answer bad input with gr.Error.
The code lives by responsibility in:

- ui/inputs.py          input checks (session, top-k, piece, dropdown choices, head labels)
- ui/decoding_views.py  the Translate tab: start/step/back/run/goto/reset, force, the position shown, reference
- ui/exports.py         export of the maps, kept per user session in a bounded file cache
- ui/other_tabs.py      head ablation, beam search, across layers, attention being learned, the model card
- ui/api.py             the API-only endpoints /translate, /attention, /attention_compact, /inside, /attribution
- ui/attribution_views.py  ALTI+ / saliency in the Translate view, the word alignment of each method

A module constant is read where it is defined: patch it there (e.g. ui.api.MAX_API_WEIGHTS), not here.
"""
from __future__ import annotations

from .api import (MAX_API_WEIGHTS, api_attention, api_attention_compact, api_attribution, api_inside, api_translate,
                  decoded)
from .attribution_views import attribution_at, word_alignment_at, word_alignment_follow
from .decoding_views import (at_position, back, force, force_at, goto, inside_at, noop, outputs,
                             reference, reference_at, reset, run, start, step, step_view,
                             trajectory_outputs)
from .exports import (EXPORT_PREFIX, EXPORTS_MAX, EXPORTS_PER_SESSION, FILES_PER_EXPORT, LAYOUT, end_session,
                      export_at, export_event, export_maps, export_root, figures_html, gradio_cache, prune_exports)
from .inputs import (HEAD_RE, TOPK, check_k, check_piece, choice_index, fail, need_session, parse_head_labels,
                     reference_problem, source_problem)
from .other_tabs import (ablate, ablate_at, across_layers, across_layers_at, across_layers_follow, beam, beam_payload,
                         beam_pick, beam_started, head_choices, learned, learned_at, model_card)

__all__ = ["MAX_API_WEIGHTS", "api_attention", "api_attention_compact", "api_inside", "api_translate", "decoded",
           "api_attribution", "attribution_at", "word_alignment_at", "word_alignment_follow",
           "at_position", "back", "force", "force_at", "goto", "inside_at", "noop", "outputs",
           "reference", "reference_at",
           "reset", "run", "start", "step", "step_view", "trajectory_outputs",
           "EXPORT_PREFIX", "EXPORTS_MAX", "EXPORTS_PER_SESSION", "FILES_PER_EXPORT", "LAYOUT", "end_session",
           "export_at", "export_event", "export_maps", "export_root", "figures_html", "gradio_cache", "prune_exports",
           "HEAD_RE", "TOPK", "check_k", "check_piece", "choice_index", "fail", "need_session", "parse_head_labels",
           "reference_problem", "source_problem",
           "ablate", "ablate_at", "across_layers", "across_layers_at", "across_layers_follow", "beam",
           "beam_payload", "beam_pick", "beam_started", "head_choices", "learned", "learned_at", "model_card"]
