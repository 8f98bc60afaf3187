"""The Translate tab's handlers: step-through greedy decoding, forcing a piece, the position the view shows,
and a reference translation's attention.

Plain functions of (translator, inputs) -> outputs: they never mutate the state they are given (they fork
it), never touch process-wide state, and answer bad input with gr.Error.
"""
from __future__ import annotations

import html
import json
import time

import gradio as gr

from attention_lens.shell.inputs import TOPK, check_k, check_piece, fail, need_session, told
from attention_lens.translate import payload as P
from attention_lens.translate.inside_payload import inside_payload
from transformer.decode.decoding import DecodingSession, Translator


def outputs(session: DecodingSession, k: int = TOPK, words: bool = False):
    """(state, translation so far, attention payload, top-k payload) for a session at its cursor."""
    k = check_k(k)
    topk = {"items": session.topk(k), "done": session.done, "step": session.cursor}
    return session, session.translation, P.session_payload(session.view(bool(words))), topk


def trajectory_outputs(session: DecodingSession | None, k: int = TOPK, words: bool = False,
                       t0: float | None = None, mode: str = "greedy", traj=None, started: str | None = None):
    """(state, translation at the cursor, trajectory payload of the whole history, top-k at the cursor): one
    call into the library (DecodingSession.trajectory, unless `traj` is given), then only encoding. `started`:
    the sentence a Start started (its answer: the payload names it and carries its caveats, the top-k its notes).
    This is the one place a Start's or a forced piece's answer is built; the page takes `for_page` of it."""
    k = check_k(k)
    traj = traj if traj is not None else session.trajectory()
    topk = {"items": traj.topk(traj.cursor, k, traj.piece_names.__getitem__), "done": traj.done[traj.cursor],
            "step": traj.cursor}
    elapsed = None if t0 is None else (time.perf_counter() - t0) * 1000
    payload = P.trajectory_payload(traj, k=k, words=bool(words), mode=mode, elapsed_ms=elapsed, started=started)
    if started is not None:  # what was cut and the caveats, also for programs (gradio_client)
        topk["notes"] = list(traj.notes) + [c["message"] for c in traj.caveats]
    return traj.session, traj.texts[traj.cursor], payload, topk


def for_page(answer) -> list:
    """The page's part of an answer (state, translation, payload, top-k): all but the top-k, which the page draws
    once, from the payload's steps.topk at the step it shows (assets/shell/lens_labels.js pushTopk); the top-k beside
    the payload is for programs (/start, /force, gradio_client)."""
    return list(answer[:3])


def start(tr: Translator, text: str, k: int = TOPK, words: bool = False):
    """Decode the whole sentence greedily and send every step at once: the browser steps through it locally.
    The session keeps the whole history with its cursor at 0, so /step, /back, ... (gradio_client) move
    along it as before."""
    t0 = time.perf_counter()
    check_k(k)
    try:
        traj = tr.trajectory(text)  # down into the library once: the whole decoding, every step
    except ValueError as e:
        fail(e)
    tell_notes(traj.notes)
    # the sentence started, as typed: every tab names it (assets/shell/sentence.js); when the input was cut, the part
    # translated (read back from its pieces), never the whole input (megabytes, and more than was translated)
    started = tr.tokenizer.decode(traj.source_ids[:-1]) if traj.notes else text
    return trajectory_outputs(None, k, words, t0, traj=traj, started=started)


def tell_notes(notes) -> None:
    """A Start's notes (e.g. the input was cut), told to this request's user alone (a toast's message is HTML:
    escaped, the note's end mark </s> is shown, not taken for a tag)."""
    for note in notes:
        gr.Warning(html.escape(told(note)))


def step(tr: Translator, session, k: int = TOPK, words: bool = False):
    s = need_session(session)
    check_k(k)
    s.step()
    return outputs(s, k, words)


def run(tr: Translator, session, k: int = TOPK, words: bool = False):
    s = need_session(session)
    check_k(k)
    s.run()
    return outputs(s, k, words)


def back(tr: Translator, session, k: int = TOPK, words: bool = False):
    s = need_session(session)
    check_k(k)
    s.back()
    return outputs(s, k, words)


def goto(tr: Translator, session, i, k: int = TOPK, words: bool = False):
    s = need_session(session)
    check_k(k)
    if isinstance(i, float) and i.is_integer():
        i = int(i)
    try:
        s.goto(i)
    except ValueError as e:
        fail(e)
    return outputs(s, k, words)


def reset(tr: Translator, session, k: int = TOPK, words: bool = False):
    """Step 0 of the greedy trajectory, as the page's Reset: the same history /start decoded when no piece was
    forced in it (its cursor moved back, nothing decoded again); after a forced piece, the greedy decoding again
    (its heads off, as at_position), which the session no longer holds."""
    s = need_session(session)
    check_k(k)
    if not any(p.forced for p in s.positions):
        s.goto(0)
        return outputs(s, k, words)
    return outputs(tr.start_ids(s.source_ids, ablate=s.ablated or None), k, words)


def step_view(tr: Translator, session, k: int = TOPK, words: bool = False):
    """Re-render the current step (e.g. after k changed) without moving."""
    return outputs(need_session(session), k, words)


def force(tr: Translator, session, piece, k: int = TOPK, words: bool = False):
    s = need_session(session)
    check_k(k)
    check_piece(piece)
    try:
        s.force(piece)
    except ValueError as e:
        fail(e)
    return outputs(s, k, words)


def force_at(tr: Translator, session, position, piece, k: int = TOPK, words: bool = False):
    """Force `piece` at the position the browser shows and decode greedily to the end: the new trajectory,
    shown at the forced step (one request for the whole what-if)."""
    t0 = time.perf_counter()
    check_k(k)
    check_piece(piece)
    s = at_position(tr, session, position)
    try:
        s.force(piece)
    except ValueError as e:
        fail(e)
    at = s.cursor
    tr.finish(s)  # greedily to the end, in a batch with other users' decodings
    s.goto(at)
    return trajectory_outputs(s, k, words, t0)


def at_position(tr: Translator, session, position=None) -> DecodingSession:
    """A copy of the session at the position the browser shows. `position`: None or "" (the session's own
    cursor), or {"step": t, "ids": [token ids 0..t], "forced": [0/1 per position]} (a dict, or its JSON as
    the page's js puts it into the request: components.live_position). When the session's history does not hold
    pieces, each forced or not as the view says (e.g. the view went back to the greedy trajectory after a forced one),
    the position is decoded again from the source, by a Script of those pieces (Translator.replays). A position may lie
    past greedy decoding's limit (a reference is followed with a longer one): up to the model's max_len, its limit
    grown to reach those pieces."""
    s = need_session(session)
    if position is None or position == "":
        return s
    if isinstance(position, str):
        try:
            position = json.loads(position) if len(position) < 20_000 else None
        except ValueError:
            position = None
    ids = position.get("ids") if isinstance(position, dict) else None
    forced = position.get("forced", [0] * len(ids)) if isinstance(ids, list) else None
    V, bos = len(tr.tokenizer), tr.config.bos_id
    ok = (isinstance(ids, list) and isinstance(forced, list) and 1 <= len(ids) <= tr.config.max_len
          and len(forced) == len(ids) and ids[0] == bos
          and all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < V for i in ids)
          and position.get("step", len(ids) - 1) == len(ids) - 1)
    if not ok:
        fail(ValueError("position must be {\"step\": t, \"ids\": [the t+1 token ids from <s>], \"forced\": [...]}"))
    if [(p.token, p.forced) for p in s.positions[1:len(ids)]] == [(i, bool(f)) for i, f in zip(ids[1:], forced[1:])]:
        s.cursor = len(ids) - 1  # the session holds these pieces, each forced or not as the view says
        return s
    pieces = {t: (i, bool(f)) for t, (i, f) in enumerate(zip(ids, forced)) if t}
    try:
        r = tr.replays(s.source_ids, [(s.ablated or None, pieces, len(ids) - 1)])[0]  # its limit grown to reach them
    except ValueError as e:
        fail(e)
    if len(r.positions) < len(ids):  # nothing follows </s> or the length limit: never another step than the one asked
        unreachable(r, len(ids) - 1)
    return r


def unreachable(r: DecodingSession, step: int):
    """gr.Error: `step` lies beyond the end of the decoding `r` (which is done at its cursor)."""
    why = "</s>" if r.target_ids[-1] == r.translator.config.eos_id else f"the length limit ({r.limit} pieces)"
    fail(ValueError(f"step {step} cannot be reached: this decoding ends at step {r.cursor} ({why})"))


def inside_at(tr: Translator, session, position, kind, layer, head) -> dict:
    """The "Inside this head" panel's payload (attention_lens/translate/inside_payload.py): one head (0-based layer and
    head) over the whole trajectory the view holds, whose last position `position` is ({"step", "ids", "forced"}, as
    assets/translate/inside.js sends it; None: the session's whole history). One teacher-forced pass
    (DecodingSession.inside)."""
    s = at_position(tr, session, position)
    if position is None or position == "":
        s.cursor = len(s.positions) - 1
    try:
        ins = s.inside(kind, layer, head, norms=True)
    except ValueError as e:
        fail(e)
    return inside_payload(ins, s.target_ids)


def reference_at(tr: Translator, session, ref: str, k: int = TOPK, words: bool = False):
    """A reference translation of the started sentence, teacher-forced, as a trajectory the view steps through
    like a decoding (shown at its last step): every position's maps and the model's own top-k after each of the
    reference's prefixes. (attention payload, top-k at that step); the session itself is left as it is."""
    s = need_session(session)
    check_k(k)
    try:
        r = tr.follow(s.source_ids, tr.target_ids_of(ref)[1:], s.ablated or None)  # batched with others'
    except ValueError as e:
        fail(e)
    _, _, payload, topk = trajectory_outputs(r, k, words, mode="reference")
    return payload, topk


def reference(tr: Translator, text: str, ref: str):
    """Teacher-forced attention of a reference translation the user typed."""
    try:
        maps = tr.attend(text, ref)
    except ValueError as e:
        fail(e)
    payload = P.attention_payload(maps, maps.source_tokens, maps.target_tokens, cursor=len(maps.target_tokens) - 1,
                                  done=True, mode="reference", doc="ref")
    return payload, {"items": [], "done": True}


def noop():
    """Does nothing: the benchmark times a Gradio round trip with it."""
    return
