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
the expanded weights) is kept from step to step by `run_rows` in a `Rows`, so that a step stacks nothing again:
a pass is about 400 small operations instead of 700, each of which hands Python's GIL to the app's other threads
and back (python -m benchmarks.classroom, docs/benchmarks.md).

Head ablation is applied per row (each row's own heads zeroed before its output projection, as `HeadAblation`
does), and the attention rows are read from the weights computed here rather than by hooks. A step copies to the
host once for the whole batch (the greedy choices and every row's attention), like a single step.

`Batcher` collects the sessions that reach one model together (a new batch waits, at most `window_s`, for the
callers that announced themselves and are still encoding; a lone caller never waits; at most `max_rows` rows) and runs them to the end together on one worker thread (each session begun without its first position, <s>,
which the batch computes for all its new rows in one pass); each caller gets its own session back
the moment its row is done (a row that ends early does not wait for the others). A session whose source is longer
than `max_pieces` is decoded apart by its caller, and an error in a batch is answered by decoding each of its
sessions alone, so it reaches only the request that caused it.
"""
from __future__ import annotations

import threading
import time
import weakref
from collections import defaultdict

import numpy as np
import torch
from torch import Tensor

from .attention import scaled_dot_product_attention
from .capture import host_arrays
from .session import Position

WINDOW_S = 0.05  # the longest a new batch waits for callers still encoding (arrive()); none others: it starts at once
MAX_ROWS = 32  # rows decoded together at most
MAX_PIECES = 64  # a source longer than this is decoded apart (its steps are dearer and it may decode for long)


def _split(x: Tensor, H: int) -> Tensor:
    B, T, D = x.shape
    return x.view(B, T, H, D // H).transpose(1, 2)  # (B, H, T, d)


def _merge(out: Tensor, heads: list[list[int]]) -> Tensor:
    """(B, H, 1, d) head outputs -> (B, 1, H*d), each row's ablated heads zeroed (HeadAblation's pre-hook)."""
    B, H, T, d = out.shape
    x = out.transpose(1, 2).reshape(B, T, H * d)  # (B, 1, D)
    if any(heads):
        x = x.reshape(B, T, H, d).clone()  # (B, 1, H, d)
        for b, hs in enumerate(heads):
            for h in hs:
                x[b, :, h, :] = 0
        x = x.flatten(-2)  # (B, 1, D)
    return x


_norms = weakref.WeakKeyDictionary()  # model -> max_j ‖E_j‖ of its output projection (read only: computed once)


def _greedy(model, hidden: Tensor) -> Tensor:
    """argmax of model.project(row) for each row of hidden (B, D), exactly as one row alone gives it. The logits
    of the batch come from one matrix product, which may differ from a row's own in the last bits, but never by
    more than err = 2·γ_D·‖h‖·max_j‖E_j‖ (γ_D = D·2⁻²⁴: a sum of D products in any order, for either of the two,
    and Σ|h_i E_ji| ≤ ‖h‖‖E_j‖): a row whose two best logits lie more than 2·err apart has the same argmax
    either way. The few other rows (a near tie) are projected alone, as model.project does."""
    emb = model.embed.weight  # (V, D), tied: model.project(h) = h @ embᵀ
    if model not in _norms:
        _norms[model] = float(emb.norm(dim=1).max())
    logits = hidden @ emb.t()  # (B, V)
    top = logits.topk(2, dim=-1).values  # (B, 2)
    err = 2 * 1.01 * emb.size(1) * 2.0 ** -24 * hidden.norm(dim=-1) * _norms[model]  # (B,)
    greedy = logits.argmax(-1)  # (B,)
    near = torch.nonzero(top[:, 0] - top[:, 1] <= 2 * err)[:, 0].tolist()  # rows to project alone
    for b in near:
        greedy[b] = (hidden[b:b + 1] @ emb.t()).argmax(-1)[0]
    return greedy


def _heads(sessions, kind: str, layer: int) -> list[list[int]]:
    return [sorted(h for k, l, h in s.ablated if k == kind and l == layer) for s in sessions]


def _runs(lengths: list[int]) -> list[tuple[int, int]]:
    """[(a, b), ...]: the runs of equal values in `lengths`, rows a..b-1 each."""
    cuts = [0] + [b for b in range(1, len(lengths)) if lengths[b] != lengths[b - 1]] + [len(lengths)]
    return list(zip(cuts[:-1], cuts[1:]))


class Rows:
    """What `feed_rows` reads besides the new tokens, for sessions of one translator at one position, kept by
    `run_rows` from one step to the next so that a step rebuilds nothing: each decoder layer's keys and values of
    the positions so far, (B, H, t, d), extended by each step; for each run of rows with one source length
    (rows a..b-1: run_rows orders its rows by source length, so there is one run per length) the cross-attention
    keys and values of each layer, (G, H, S, d); each row's switched-off heads; the weights of every Linear
    expanded to the B rows. `keep(sessions)` narrows it to some of its rows (those not done)."""

    def __init__(self, sessions, keys: list[Tensor] | None = None, values: list[Tensor] | None = None):
        tr = sessions[0].translator
        self.sessions, self.t = list(sessions), sessions[0].cursor + 1
        if any(s.translator is not tr or s.cursor + 1 != self.t for s in sessions):
            raise ValueError("feed_rows needs sessions of one translator at the same position")
        decoder, B = tr.model.decoder, len(sessions)
        L = len(decoder)
        if keys is None and self.t:  # (B, L, H, t, d) each, from the sessions' positions
            k = torch.stack([torch.stack([p.k for p in s.positions[:self.t]], 2) for s in sessions])
            v = torch.stack([torch.stack([p.v for p in s.positions[:self.t]], 2) for s in sessions])
            keys, values = list(k.unbind(1)), list(v.unbind(1))  # (B, H, t, d) per layer
        self.keys, self.values = keys, values
        self.runs = _runs([s.cross_k.size(2) for s in sessions])
        self.cross = [([torch.stack([s.cross_k[i] for s in sessions[a:b]]) for i in range(L)],  # (G, H, S, d) each
                       [torch.stack([s.cross_v[i] for s in sessions[a:b]]) for i in range(L)]) for a, b in self.runs]
        self.heads = [(_heads(sessions, "decoder_self", i), _heads(sessions, "cross", i)) for i in range(L)]
        self.linear = {}  # Linear module -> (its weightᵀ expanded to (B, K, N), its bias)
        for block in decoder:
            for m in (block.self_attn.q_proj, block.self_attn.k_proj, block.self_attn.v_proj, block.self_attn.out_proj,
                      block.cross_attn.q_proj, block.cross_attn.out_proj, block.ffn.linear1, block.ffn.linear2):
                w = m.weight.t()  # (K, N), a view
                self.linear[m] = (w.expand(B, *w.shape), m.bias)

    def holds(self, sessions) -> bool:
        """These sessions are some of this one's rows, still at its position."""
        mine = {id(s) for s in self.sessions}
        return all(id(s) in mine for s in sessions) and sessions[0].cursor + 1 == self.t

    def keep(self, sessions) -> "Rows":
        """These rows only (some of this one's, in the same order), their keys and values taken from here."""
        if [id(s) for s in sessions] == [id(s) for s in self.sessions]:
            return self
        if self.keys is None:
            return Rows(sessions)
        where = {id(s): b for b, s in enumerate(self.sessions)}
        idx = torch.tensor([where[id(s)] for s in sessions], device=sessions[0].cross_k.device)
        return Rows(sessions, [k.index_select(0, idx) for k in self.keys],
                    [v.index_select(0, idx) for v in self.values])

    def apply(self, x: Tensor, m) -> Tensor:
        """m(x) for x (B, 1, K), each row computed as F.linear computes a single row (see the module docstring)."""
        w, b = self.linear[m]
        return torch.baddbmm(b, x, w)  # (B, 1, N)


@torch.inference_mode()
def feed_rows(sessions, tokens: list[int], forced: list[bool] | None = None,
              rows: Rows | None = None) -> list[Position]:
    """The Position each session's `feed(token, forced)` computes, for sessions of one translator whose cursors
    are at the same position, in one pass of the decoder. Changes no session; `rows` (run_rows'), when given, is
    for these very sessions and is advanced to the new position."""
    rows = Rows(sessions) if rows is None else rows
    if [id(s) for s in rows.sessions] != [id(s) for s in sessions] or rows.t != sessions[0].cursor + 1:
        raise ValueError("feed_rows was given the rows of other sessions")
    tr = sessions[0].translator
    model, dev, B, t = tr.model, tr.device, len(sessions), rows.t
    forced = forced or [False] * B
    H = model.config.n_heads
    x = model.embed_tokens(torch.tensor([[tok] for tok in tokens], dtype=torch.long, device=dev), t)  # (B, 1, D)
    keys, values, self_w, cross_w = [], [], [], [[] for _ in rows.runs]
    for i, block in enumerate(model.decoder):
        a, c, (self_heads, cross_heads) = block.self_attn, block.cross_attn, rows.heads[i]
        h = block.norm1(x)  # (B, 1, D)
        k, v = _split(rows.apply(h, a.k_proj), H), _split(rows.apply(h, a.v_proj), H)  # (B, H, 1, d)
        keys.append(torch.cat([rows.keys[i], k], 2) if t else k)  # (B, H, t+1, d)
        values.append(torch.cat([rows.values[i], v], 2) if t else v)
        q = _split(rows.apply(h, a.q_proj), H)  # (B, H, 1, d)
        out, w = scaled_dot_product_attention(q, keys[i], values[i])  # (B, H, 1, d), (B, H, 1, t+1)
        self_w.append(w[:, :, 0])
        x = x + rows.apply(_merge(out, self_heads), a.out_proj)  # (B, 1, D)
        q = _split(rows.apply(block.norm2(x), c.q_proj), H)  # (B, H, 1, d)
        outs = []
        for g, (lo, hi) in enumerate(rows.runs):  # rows lo..hi-1 share a source length: no padding
            ck, cv = rows.cross[g][0][i], rows.cross[g][1][i]  # (G, H, S, d)
            o, w = scaled_dot_product_attention(q[lo:hi], ck, cv)  # (G, H, 1, d), (G, H, 1, S)
            outs.append(o)
            cross_w[g].append(w[:, :, 0])  # (G, H, S)
        out = torch.cat(outs) if len(outs) > 1 else outs[0]  # (B, H, 1, d)
        x = x + rows.apply(_merge(out, cross_heads), c.out_proj)
        f = block.ffn
        x = x + rows.apply(torch.relu(rows.apply(block.norm3(x), f.linear1)), f.linear2)
    hidden = model.decoder_norm(x)  # (B, 1, D)
    greedy = _greedy(model, hidden[:, 0])  # (B,)
    ks, vs = torch.stack([k[:, :, -1] for k in keys], 1), torch.stack([v[:, :, -1] for v in values], 1)  # (B, L, H, d)
    # one copy to the host for the whole batch: the greedy ids (their int64 bits as float32, first: 8-byte
    # aligned), every row's self-attention rows and each run's cross-attention rows
    choice, selfs, *crosses = host_arrays(greedy.view(torch.float32), torch.stack(self_w, 1),  # (B, L, H, t+1)
                                          *(torch.stack(ws, 1) for ws in cross_w))  # (G, L, H, S) each
    ids = choice.view(np.int64)
    cross_rows = [cw[j] for cw in crosses for j in range(len(cw))]  # row b's, in the rows' order
    rows.keys, rows.values, rows.t = keys, values, t + 1
    # each row's k, v and state: views of this step's (B, ...) tensors, one storage for the batch's rows (a clone per
    # row would be three more copies per row and step)
    return [Position(int(tokens[b]), bool(forced[b]), selfs[b].copy(), cross_rows[b].copy(), k, v, h, int(ids[b]))
            for b, k, v, h in zip(range(B), ks.unbind(0), vs.unbind(0), hidden[:, -1].unbind(0))]


def run_rows(sessions, done=None) -> None:
    """Step every session greedily to its end, rows at the same position together (feed_rows); `done(session)`
    is called as each one ends."""
    active = sorted((s for s in sessions if not s.done), key=lambda s: s.cross_k.size(2))  # one run per length
    for s in sessions:
        if done and s.done:
            done(s)
    rows = None
    while active:
        by_pos = defaultdict(list)
        for s in active:
            by_pos[s.cursor].append(s)
        group = by_pos[min(by_pos)]  # the furthest behind first, so that the positions meet
        rows = rows.keep(group) if rows is not None and rows.holds(group) else Rows(group)
        tokens = [s.positions[s.cursor].greedy if s.positions else s.translator.config.bos_id for s in group]
        for s, p in zip(group, feed_rows(group, tokens, rows=rows)):  # a session begun without <s> is fed it first
            s._put(p)
        active = [s for s in active if not s.done]
        if done:
            for s in group:
                if s.done:
                    done(s)


class _Item:
    __slots__ = ("begin", "session", "error", "event")

    def __init__(self, begin):
        self.begin, self.session, self.error, self.event = begin, None, None, threading.Event()


class Batcher:
    """Runs the sessions handed to `run` to their end, those that arrive together in one batch (see the module
    docstring). Thread-safe; one worker thread per Batcher, started at the first batched request. `window_s` 0
    and `max_rows` 1 turn batching off (every session is run by its caller, as without a Batcher)."""

    def __init__(self, window_s: float = WINDOW_S, max_rows: int = MAX_ROWS, max_pieces: int = MAX_PIECES,
                 enabled: bool = False):
        self.window_s, self.max_rows, self.max_pieces, self.enabled = window_s, max_rows, max_pieces, enabled
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
        """`begin().run()`: the session `begin()` starts (encoding its sentence), decoded to its end, in a batch with
        the sessions of other callers when batching is on; `begin` is then called on the worker thread, so that the
        encodings of a batch, each alone and under its own hooks, follow one another instead of all registering hooks
        on the shared model at once. `pieces`: the source's length (a longer one than max_pieces is decoded apart, by
        its caller). `arrived`: this caller announced itself with `arrive()`. Returns the session."""
        batched = self.enabled and self.max_rows >= 2 and pieces <= self.max_pieces
        item = _Item(begin) if batched else None
        with self._cond:
            self._arriving -= 1 if arrived else 0
            if item is not None:
                self._pending.append(item)
                if self._worker is None or not self._worker.is_alive():
                    self._worker = threading.Thread(target=self._loop, name="attention-lens-batcher", daemon=True)
                    self._worker.start()
            self._cond.notify_all()
        if item is None:
            return begin().run()
        item.event.wait()
        if item.error is not None:
            raise item.error
        return item.session

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
            self.batches = (self.batches + [len(batch)])[-1000:]
            self._decode(batch)

    @staticmethod
    def _decode(batch: list[_Item]) -> None:
        for it in batch:  # encoded one after the other; an input that cannot be encoded fails its own request
            try:
                it.session = it.begin()
            except Exception as e:  # noqa: BLE001 - handed to its caller
                it.error = e
                it.event.set()
        batch = [it for it in batch if it.error is None]
        by_session = {id(it.session): it for it in batch}
        try:
            run_rows([it.session for it in batch], lambda s: by_session[id(s)].event.set())
        except Exception:  # noqa: BLE001 - each session again alone: an error reaches only its own request
            for it in batch:
                if it.event.is_set():
                    continue
                try:
                    it.session.run()
                except Exception as e:  # noqa: BLE001 - handed to its caller
                    it.error = e
                it.event.set()
        finally:
            for it in batch:
                it.event.set()
