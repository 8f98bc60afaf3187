"""Decoding several users' sentences together, each bit for bit as it is decoded alone.

`feed_rows(sessions, tokens)` is `DecodingSession.feed` for many sessions at once: one pass of the decoder over
B new positions instead of B passes. It gives every session exactly the Position its own `feed` gives (the same
float32 bits: tests/test_batching.py), because every operation of it is one that a CPU computes for a row the
same way whatever else is in the batch (measured with torch 2.13 on the CPU, and checked by the test):

- a Linear layer as `baddbmm(b, x (B, 1, K), Wᵀ expanded to (B, K, N))`: one matrix-vector product per row plus
  the bias, the very kernel `F.linear` runs on a single row. A batched `x @ Wᵀ` (one (B, K) matrix product)
  differs from it in the last bits (up to 3e-6 on these weights), which may change a near-tie argmax: it is never
  used here;
- attention as `scaled_dot_product_attention` over (B, H) matrices of the same shapes and layouts as alone:
  self-attention keys are the same length for every row (all rows are at the same position), and cross-attention is
  computed per run of rows whose sources have the same length, so no row is padded (a padded softmax or a longer
  weighted sum can round differently), on keys and values stacked contiguous as a single row's are (a strided view
  of them rounds differently: the test saw it);
- layer norms, embeddings, ReLU and residual sums, which act on each row alone.

What a step reads besides the new tokens (the keys and values so far, each run's cross-attention keys and values,
the expanded weights) is kept from step to step by `run_rows` in a `Rows`, so that a step stacks nothing again.
The step itself is `batch_step.decoder_step`, compiled with TorchScript: its ~400 small operations run without
Python's GIL, which a step run op by op from Python handed to the app's other threads and waited to get back ~400
times (python -m benchmarks.batch_gil, docs/benchmarks.md).

Head ablation is applied per row (each row's own heads zeroed before its output projection, as `HeadAblation`
does), and the attention rows are read from the weights computed here rather than by hooks. A step copies to the
host once for the whole batch (the greedy choices and every row's attention), like a single step.

`Batcher` collects the sessions that reach one model together (a new batch waits, at most `window_s`, for the
callers that announced themselves and are still encoding; a lone caller never waits; at most `max_rows` rows) and
runs them to the end together on one worker thread. Each session is begun there by `begin_row` (the encoder's pass,
compiled too: `batch_step.encoder_pass`), without its first position, <s>, which the batch computes for all its
new rows in one pass. A caller that arrives while a batch runs joins it before its next step, as long as no row
of the batch has gone `join_steps` positions: the batch's rows wait while the newcomers catch up, then go on with
them (so a class's Starts, which the server's event loop hands over one after another, meet in one batch instead
of the first decoding alone while the others wait for it). Each caller gets its own session back the moment its
row is done (a row that ends early does not wait for the others). A session whose source is longer than
`max_pieces` is decoded apart by its caller, and an error in a batch is answered by decoding each of its sessions
alone, so it reaches only the request that caused it.

A batch computes `DecodingSession.finish()`: on to the end, greedily or as a session's `script` says (pieces at given
positions, up to a `stop`), so Compare's replays (`Translator.replays`, `Batcher.run_all`: three rows per request) and
a forced piece's continuation (`Translator.finish`) are batched too.
"""
from __future__ import annotations

import threading
import time
import weakref
from collections import defaultdict

import numpy as np
import torch
from torch import Tensor

from . import batch_step
from .capture import parse_heads, split_host
from .session import DecodingSession, Position

WINDOW_S = 0.05  # the longest a new batch waits for callers still encoding (arrive()); none others: it starts at once
MAX_ROWS = 32  # rows decoded together at most
JOIN_STEPS = 8  # a caller arriving while a batch runs joins it while no row of it has gone this many positions
MAX_PIECES = 64  # a source longer than this is decoded apart (its steps are dearer and it may decode for long)


_norms = weakref.WeakKeyDictionary()  # model -> max_j ‖E_j‖ of its output projection (read only: computed once)


def _err_scale(model) -> float:
    """The bound on the error of a row's logits from one batched matrix product, per unit of its ‖h‖: a row's
    argmax from `hidden @ embᵀ` for the batch may differ from model.project(row)'s in the last bits, but never by more
    than err = 2·γ_D·‖h‖·max_j‖E_j‖ (γ_D = D·2⁻²⁴: a sum of D products in any order, for either of the two, and
    Σ|h_i E_ji| ≤ ‖h‖‖E_j‖): a row whose two best logits lie more than 2·err apart has the same argmax either way.
    The few other rows (a near tie) are projected alone, as model.project does (feed_rows)."""
    emb = model.embed.weight  # (V, D), tied: model.project(h) = h @ embᵀ
    if model not in _norms:
        _norms[model] = float(emb.norm(dim=1).max())
    return 2 * 1.01 * emb.size(1) * 2.0 ** -24 * _norms[model]


class _Params:
    """A model's parameters in the lists batch_step's functions take (read only, built once per model)."""

    def __init__(self, model):
        enc, dec = model.encoder, model.decoder
        enc_linears = [m for b in enc for m in (b.self_attn.q_proj, b.self_attn.k_proj, b.self_attn.v_proj,
                                                b.self_attn.out_proj, b.ffn.linear1, b.ffn.linear2)]
        self.enc_w, self.enc_b = [m.weight for m in enc_linears], [m.bias for m in enc_linears]
        enc_norms = [n for b in enc for n in (b.norm1, b.norm2)] + [model.encoder_norm]
        self.enc_norms = [p for n in enc_norms for p in (n.weight, n.bias)]
        self.enc_eps = [n.eps for n in enc_norms]
        self.cross = [p for b in dec for m in (b.cross_attn.k_proj, b.cross_attn.v_proj) for p in (m.weight, m.bias)]
        self.dec = [m for b in dec for m in (b.self_attn.q_proj, b.self_attn.k_proj, b.self_attn.v_proj,
                                             b.self_attn.out_proj, b.cross_attn.q_proj, b.cross_attn.out_proj,
                                             b.ffn.linear1, b.ffn.linear2)]
        self.dec_b = [m.bias for m in self.dec]
        dec_norms = [n for b in dec for n in (b.norm1, b.norm2, b.norm3)] + [model.decoder_norm]
        self.dec_norms = [p for n in dec_norms for p in (n.weight, n.bias)]
        self.dec_eps = [n.eps for n in dec_norms]
        self.expanded: dict[int, list[Tensor]] = {}  # B -> the decoder's weightsᵀ expanded to B rows (views)

    def weights(self, B: int) -> list[Tensor]:
        if B not in self.expanded:
            self.expanded[B] = [m.weight.t().expand(B, m.in_features, m.out_features) for m in self.dec]
        return self.expanded[B]


_params_of = weakref.WeakKeyDictionary()  # model -> its _Params
_params_lock = threading.Lock()


def _params(model) -> _Params:
    with _params_lock:
        if model not in _params_of:
            _params_of[model] = _Params(model)
        return _params_of[model]


def begin_row(tr, src_ids: list[int], heads=frozenset()):
    """`tr.start_ids(src_ids, heads, first=False)`: the session a batch begins for a caller (its first position left
    to the batch), its encoder's pass compiled (batch_step.encoder_pass) rather than run module by module under
    hooks: the same bits (tests/test_batching.py), with a few hand-overs of the GIL instead of hundreds."""
    model, P = tr.model, _params(tr.model)
    heads = parse_heads(model, heads)
    H = model.config.n_heads
    off = [_off([heads], "encoder_self", i, H, tr.device) for i in range(len(model.encoder))]
    with torch.inference_mode():
        maps, cross_k, cross_v = batch_step.compiled("encoder_pass", model.embed.weight)(
            [int(i) for i in src_ids], model.embed.weight, model.positions.pe, model.config.pad_id, H, P.enc_w,
            P.enc_b, P.enc_norms, P.enc_eps, off, P.cross)
        encoder_self = maps.cpu().numpy()  # (L_enc, H, S, S): one copy to the host (on a CPU, the new tensor itself)
    session = DecodingSession(tr, src_ids, encoder_self, cross_k, cross_v)
    session.ablated = heads
    return session


_NONE_OFF: dict = {}  # device -> the empty mask (read only): no head switched off


def _off(ablated: list, kind: str, layer: int, H: int, device) -> Tensor:
    """(B, 1, H, 1) bool: each row's heads of `kind` switched off in `layer` (ablated: each row's (kind, layer,
    head) set); an empty tensor when no row has one."""
    off = [(b, h) for b, heads in enumerate(ablated) for k, l, h in heads if k == kind and l == layer]
    if not off:
        if device not in _NONE_OFF:
            _NONE_OFF[device] = torch.empty(0, dtype=torch.bool, device=device)
        return _NONE_OFF[device]
    mask = torch.zeros(len(ablated), 1, H, 1, dtype=torch.bool)
    for b, h in off:
        mask[b, 0, h, 0] = True
    return mask.to(device)


def _runs(lengths: list[int]) -> list[tuple[int, int]]:
    """[(a, b), ...]: the runs of equal values in `lengths`, rows a..b-1 each."""
    cuts = [0] + [b for b in range(1, len(lengths)) if lengths[b] != lengths[b - 1]] + [len(lengths)]
    return list(zip(cuts[:-1], cuts[1:]))


class Rows:
    """What `feed_rows` reads besides the new tokens, for sessions of one translator at one position, kept by
    `run_rows` from one step to the next so that a step rebuilds nothing, in the lists that
    `batch_step.decoder_step` takes: each decoder layer's keys and values of the positions so far, (B, H, t, d),
    extended by each step; for each run of rows with one source length (rows a..b-1: run_rows orders its rows by
    source length, so there is one run per length) the cross-attention keys and values of each layer, (G, H, S, d);
    each row's switched-off heads; the weights of every Linear expanded to the B rows, the biases and the layer
    norms. `keep(sessions)` narrows it to some of its rows (those not done)."""

    def __init__(self, sessions, kept: tuple[list[Tensor], list[Tensor], list[int]] | None = None):
        """`kept`: (keys, values, rows) of another Rows and which of its rows these sessions are; without it, the keys
        and values are stacked from the sessions' positions."""
        tr = sessions[0].translator
        self.sessions, self.t = list(sessions), sessions[0].cursor + 1
        if any(s.translator is not tr or s.cursor + 1 != self.t for s in sessions):
            raise ValueError("feed_rows needs sessions of one translator at the same position")
        model, B, H = tr.model, len(sessions), tr.model.config.n_heads
        L = len(model.decoder)
        S = [s.cross_k.size(2) for s in sessions]  # source lengths
        runs = _runs(S)  # run_rows orders its rows by source length: one run per length
        self.runs = [x for run in runs for x in run]  # [a, b, ...]
        self.run_shapes = [(b - a, L, H, S[a]) for a, b in runs]  # each run's cross-attention rows (G, L, H, S)
        keys, values, keep = kept or ([], [], [])
        stack = not kept and self.t  # (L, H, d) of each position so far, of each row
        pos_k = [[p.k for p in s.positions[:self.t]] for s in sessions] if stack else []
        pos_v = [[p.v for p in s.positions[:self.t]] for s in sessions] if stack else []
        self.cross_k, self.cross_v, self.keys, self.values = batch_step.compiled("gather_rows", model.embed.weight)(
            [s.cross_k for s in sessions], [s.cross_v for s in sessions], self.runs, keys, values, keep, pos_k, pos_v)
        ablated = [s.ablated for s in sessions]
        self.off = [_off(ablated, kind, i, H, tr.device) for i in range(L) for kind in ("decoder_self", "cross")]
        P = _params(model)
        self.weights, self.biases, self.norms, self.eps = P.weights(B), P.dec_b, P.dec_norms, P.dec_eps

    def holds(self, sessions) -> bool:
        """These sessions are some of this one's rows, still at its position."""
        mine = {id(s) for s in self.sessions}
        return all(id(s) in mine for s in sessions) and sessions[0].cursor + 1 == self.t

    def keep(self, sessions) -> "Rows":
        """These rows only (some of this one's, in the same order), their keys and values taken from here."""
        if [id(s) for s in sessions] == [id(s) for s in self.sessions]:
            return self
        if not self.keys:
            return Rows(sessions)
        where = {id(s): b for b, s in enumerate(self.sessions)}
        return Rows(sessions, (self.keys, self.values, [where[id(s)] for s in sessions]))


@torch.inference_mode()
def feed_rows(sessions, tokens: list[int], forced: list[bool] | None = None,
              rows: Rows | None = None) -> list[Position]:
    """The Position each session's `feed(token, forced)` computes, for sessions of one translator whose cursors
    are at the same position, in one pass of the decoder (batch_step.decoder_step). Changes no session; `rows`
    (run_rows'), when given, is for these very sessions and is advanced to the new position."""
    rows = Rows(sessions) if rows is None else rows
    if [id(s) for s in rows.sessions] != [id(s) for s in sessions] or rows.t != sessions[0].cursor + 1:
        raise ValueError("feed_rows was given the rows of other sessions")
    tr = sessions[0].translator
    model, dev, B, t = tr.model, tr.device, len(sessions), rows.t
    forced = forced or [False] * B
    L, H, emb, pe = len(model.decoder), model.config.n_heads, model.embed.weight, model.positions.pe
    if t >= pe.size(0):
        raise ValueError(f"sequence of {t + 1} positions exceeds max_len={pe.size(0)}")
    hidden, flat, keys, values, ks, vs, hs = batch_step.compiled("decoder_step", emb)(
        [int(tok) for tok in tokens], t, emb, pe, model.config.pad_id, H, rows.weights, rows.biases, rows.norms,
        rows.eps, rows.keys, rows.values, rows.cross_k, rows.cross_v, rows.runs, rows.off, _err_scale(model))
    # the one copy to the host, for the whole batch (batch_step.decoder_step says what it holds)
    choice, near, selfs, *crosses = split_host(flat.cpu().numpy(), [(B,), (B,), (B, L, H, t + 1)] + rows.run_shapes)
    ids = choice.astype(np.int64)
    for b in np.flatnonzero(near):  # a near tie: this row projected alone, as model.project does
        ids[b] = int((hidden[b:b + 1, 0] @ emb.t()).argmax(-1)[0])
    cross_rows = [cw[j] for cw in crosses for j in range(len(cw))]  # row b's, in the rows' order
    rows.keys, rows.values, rows.t = keys, values, t + 1
    # each row's k, v and state: views of this step's (B, ...) tensors, one storage for the batch's rows (a clone per
    # row would be three more copies per row and step)
    return [Position(int(tokens[b]), bool(forced[b]), selfs[b].copy(), cross_rows[b].copy(), k, v, h, int(ids[b]))
            for b, k, v, h in zip(range(B), ks, vs, hs)]

def run_rows(sessions, done=None, more=None) -> None:
    """`finish()` every session: each computed on to its end (greedily, or as its script says: DecodingSession.
    next_feed), rows at the same position together (feed_rows); `done(session)` is called as each one ends.
    `more(active)`, when given, is asked before each step for sessions to add (not yet stepped from where they are;
    `active`: the rows not done, never none); the furthest behind step first, until they meet the others' position
    and go on with them."""
    active: list = []
    fed: dict[int, tuple[int, bool]] = {}  # id(session) -> what it is fed next

    def admit(new) -> None:
        for s in new:
            if (f := s.next_feed()) is not None:
                fed[id(s)] = f
            elif done:
                done(s)
        active[:] = sorted(active + [s for s in new if id(s) in fed], key=lambda s: s.cross_k.size(2))  # a run per length

    admit(sessions)
    rows = None
    while active:
        if more is not None:
            admit(more(active))
        by_pos = defaultdict(list)
        for s in active:
            by_pos[s.cursor].append(s)
        group = by_pos[min(by_pos)]  # the furthest behind first, so that the positions meet
        rows = rows.keep(group) if rows is not None and rows.holds(group) else Rows(group)
        tokens, forced = zip(*(fed.pop(id(s)) for s in group))  # a session begun without <s> is fed it first
        for s, p in zip(group, feed_rows(group, list(tokens), list(forced), rows=rows)):
            s._put(p)
            if (f := s.next_feed()) is not None:
                fed[id(s)] = f
            elif done:
                done(s)
        active[:] = [s for s in active if id(s) in fed]


class _Item:
    __slots__ = ("begin", "session", "error", "event")

    def __init__(self, begin):
        self.begin, self.session, self.error, self.event = begin, None, None, threading.Event()


class Batcher:
    """Runs the sessions handed to `run` to their end, those that arrive together in one batch (see the module
    docstring). Thread-safe; one worker thread per Batcher, started at the first batched request. `window_s` 0
    and `max_rows` 1 turn batching off (every session is run by its caller, as without a Batcher)."""

    def __init__(self, window_s: float = WINDOW_S, max_rows: int = MAX_ROWS, max_pieces: int = MAX_PIECES,
                 enabled: bool = False, join_steps: int = JOIN_STEPS):
        self.window_s, self.max_rows, self.max_pieces, self.enabled = window_s, max_rows, max_pieces, enabled
        self.join_steps = join_steps
        self._cond = threading.Condition()
        self._pending: list[_Item] = []
        self._arriving = 0  # callers between arrive() and run(): encoding their sentences
        self._worker = None
        self.batches: list[int] = []  # the size of each batch run (the last 1000), for benchmarks and tests

    def configure(self, enabled: bool, window_s: float | None = None, max_rows: int | None = None,
                  max_pieces: int | None = None) -> "Batcher":
        self.enabled = enabled
        self.window_s = self.window_s if window_s is None else window_s
        self.max_rows = self.max_rows if max_rows is None else max_rows
        self.max_pieces = self.max_pieces if max_pieces is None else max_pieces
        return self

    def arrive(self, n: int = 1) -> None:
        """A caller is on its way (encoding its sentence; n=-1: it gave up): a new batch waits for it, up to
        `window_s`, so that callers of one burst meet in one batch while a lone caller never waits."""
        with self._cond:
            self._arriving += n
            self._cond.notify_all()

    def run(self, begin, pieces: int, arrived: bool = False):
        """`begin().finish()` (`begin` encodes a sentence or hands a session over; called on the worker thread when
        batched, so that a batch's encodings follow one another), in a batch with other callers' when batching is on.
        `pieces`: the source's length (over max_pieces: decoded apart); `arrived`: it called `arrive()` first."""
        return self.run_all([begin], [pieces], arrived)[0]

    def run_all(self, begins: list, pieces: list[int], arrived: bool = False) -> list:
        """`run` for several sessions of one caller (e.g. a comparison's intact and ablated replays), in one batch
        when batching is on: their sessions, in order. An error of one is raised after all are done."""
        batched = self.enabled and self.max_rows >= 2
        items = [_Item(begin) if batched and n <= self.max_pieces else None for begin, n in zip(begins, pieces)]
        with self._cond:
            self._arriving -= 1 if arrived else 0
            if any(items):
                self._pending.extend(it for it in items if it is not None)
                if self._worker is None or not self._worker.is_alive():
                    self._worker = threading.Thread(target=self._loop, name="attention-lens-batcher", daemon=True)
                    self._worker.start()
            self._cond.notify_all()
        out, error = [], None
        for begin, it in zip(begins, items):
            try:
                if it is not None and it.event.wait() and it.error is not None:
                    raise it.error
                out.append(begin().finish() if it is None else it.session)
            except Exception as e:  # noqa: BLE001 - raised once the others are done
                error = error or e
                out.append(None)
        if error is not None:
            raise error
        return out

    def _loop(self) -> None:
        torch.set_grad_enabled(False)
        while True:
            with self._cond:
                while not self._pending:
                    self._cond.wait()
                deadline = time.monotonic() + self.window_s
                while (len(self._pending) < self.max_rows and self._arriving > 0
                       and (left := deadline - time.monotonic()) > 0):
                    self._cond.wait(left)
                batch, self._pending = self._pending[:self.max_rows], self._pending[self.max_rows:]
            self.batches = (self.batches + [0])[-1000:]  # its size, counted by _decode as callers join it
            self._decode(batch)

    def _join(self, active: list, taken: int) -> list[_Item]:
        """The callers waiting now that may join a running batch whose rows not done are `active`, of `taken` rows
        so far: while none of its rows is `join_steps` positions on (they wait while the newcomers catch up), up to
        `max_rows` rows in all."""
        if taken >= self.max_rows or any(s.cursor + 1 >= self.join_steps for s in active):
            return []
        with self._cond:
            new, self._pending = self._pending[:self.max_rows - taken], self._pending[self.max_rows - taken:]
        return new

    def _decode(self, batch: list[_Item]) -> None:
        """The batch's sessions begun and run to their end, with the callers that join it on the way (counted in
        the last of `batches`)."""
        rows: dict[int, _Item] = {}  # id(session) -> its caller, every row begun in this batch
        taken = 0

        def begin(items: list[_Item]) -> list:
            nonlocal taken
            taken += len(items)
            self.batches[-1] = taken
            for it in items:  # encoded one after the other; an input that cannot be encoded fails its own request
                try:
                    it.session = it.begin()
                    rows[id(it.session)] = it
                except Exception as e:  # noqa: BLE001 - handed to its caller
                    it.error = e
                    it.event.set()
            return [it.session for it in items if it.error is None]

        try:
            run_rows(begin(batch), lambda s: rows[id(s)].event.set(), lambda active: begin(self._join(active, taken)))
        except Exception:  # noqa: BLE001 - each session again alone: an error reaches only its own request
            for it in rows.values():
                if it.event.is_set():
                    continue
                try:
                    it.session.finish()
                except Exception as e:  # noqa: BLE001 - handed to its caller
                    it.error = e
                it.event.set()
        finally:
            for it in rows.values():
                it.event.set()
