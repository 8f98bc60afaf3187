"""Decoding several users' sentences together, each bit for bit as it is decoded alone.

`feed_rows(sessions, tokens)` is `DecodingSession.feed` for many sessions at once: one pass of the decoder over
B new positions instead of B passes. It gives every session exactly the Position its own `feed` gives (the same
float32 bits: tests/test_batching.py), because every operation of it is one that a CPU computes for a row the
same way whatever else is in the batch (measured with torch 2.13 on the CPU, and checked by the test):

- a Linear layer as `bmm(x (B, 1, K), Wᵀ expanded to (B, K, N)) + b`: one matrix-vector product per row, the very
  kernel `F.linear` runs on a single row. A batched `x @ Wᵀ` (one (B, K) matrix product) differs from it in the
  last bits (up to 3e-6 on these weights), which may change a near-tie argmax: it is never used here;
- attention as `scaled_dot_product_attention` over (B, H) matrices of the same shapes as alone: self-attention keys
  are the same length for every row (all rows are at the same position), and cross-attention is computed per group
  of rows whose sources have the same length, so no row is padded (a padded softmax or a longer weighted sum
  can round differently);
- layer norms, embeddings, ReLU and residual sums, which act on each row alone.

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


def _linear(x: Tensor, m) -> Tensor:
    """m(x) for x (B, 1, K), each row computed as F.linear computes a single row (see the module docstring)."""
    w = m.weight.t()  # (K, N), a view
    return torch.bmm(x, w.expand(x.size(0), *w.shape)) + m.bias  # (B, 1, N)


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
    either way. The few other rows (a near tie) are projected alone (`_linear`'s kernel), as model.project does."""
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


@torch.inference_mode()
def feed_rows(sessions, tokens: list[int], forced: list[bool] | None = None) -> list[Position]:
    """The Position each session's `feed(token, forced)` computes, for sessions of one translator whose cursors
    are at the same position, in one pass of the decoder. Changes no session."""
    tr = sessions[0].translator
    model, dev, B = tr.model, tr.device, len(sessions)
    forced = forced or [False] * B
    t = sessions[0].cursor + 1  # positions already computed before the new one, the same for every row
    if any(s.translator is not tr or s.cursor + 1 != t for s in sessions):
        raise ValueError("feed_rows needs sessions of one translator at the same position")
    H = model.config.n_heads
    if t:  # (B, L, H, t, d) each; none before the first position (<s>)
        keys = torch.stack([torch.stack([p.k for p in s.positions[:t]], 2) for s in sessions])
        values = torch.stack([torch.stack([p.v for p in s.positions[:t]], 2) for s in sessions])
    by_len = defaultdict(list)  # rows grouped by source length: cross-attention of a group needs no padding
    for b, s in enumerate(sessions):
        by_len[s.cross_k.size(2)].append(b)
    groups = list(by_len.values())
    x = model.embed_tokens(torch.tensor([[tok] for tok in tokens], dtype=torch.long, device=dev), t)  # (B, 1, D)
    new_k, new_v, self_w, cross_w = [], [], [], [[] for _ in groups]
    for i, block in enumerate(model.decoder):
        a, c = block.self_attn, block.cross_attn
        h = block.norm1(x)  # (B, 1, D)
        k, v = _split(_linear(h, a.k_proj), H), _split(_linear(h, a.v_proj), H)  # (B, H, 1, d)
        new_k.append(k[:, :, 0])
        new_v.append(v[:, :, 0])
        out, w = scaled_dot_product_attention(_split(_linear(h, a.q_proj), H),
                                              torch.cat([keys[:, i], k], 2) if t else k,
                                              torch.cat([values[:, i], v], 2) if t else v)  # (B, H, 1, d), (B, H, 1, t+1)
        self_w.append(w[:, :, 0])
        x = x + _linear(_merge(out, _heads(sessions, "decoder_self", i)), a.out_proj)  # (B, 1, D)
        q = _split(_linear(block.norm2(x), c.q_proj), H)  # (B, H, 1, d)
        out = torch.empty_like(q)
        for g, rows in enumerate(groups):
            ck = torch.stack([sessions[b].cross_k[i] for b in rows])  # (G, H, S, d)
            cv = torch.stack([sessions[b].cross_v[i] for b in rows])
            o, w = scaled_dot_product_attention(q[rows], ck, cv)  # (G, H, 1, d), (G, H, 1, S)
            out[rows] = o
            cross_w[g].append(w[:, :, 0])  # (G, H, S)
        x = x + _linear(_merge(out, _heads(sessions, "cross", i)), c.out_proj)
        f = block.ffn
        x = x + _linear(torch.relu(_linear(block.norm3(x), f.linear1)), f.linear2)
    hidden = model.decoder_norm(x)  # (B, 1, D)
    greedy = _greedy(model, hidden[:, 0])  # (B,)
    ks, vs = torch.stack(new_k, 1), torch.stack(new_v, 1)  # (B, L, H, d)
    # one copy to the host for the whole batch: the greedy ids (their int64 bits as float32, first: 8-byte
    # aligned), every row's self-attention rows and each group's cross-attention rows
    choice, selfs, *crosses = host_arrays(greedy.view(torch.float32), torch.stack(self_w, 1),  # (B, L, H, t+1)
                                          *(torch.stack(ws, 1) for ws in cross_w))  # (G, L, H, S) each
    ids = choice.view(np.int64)
    cross_rows = {}
    for rows, cw in zip(groups, crosses):
        cross_rows.update({b: cw[j] for j, b in enumerate(rows)})
    return [Position(int(tokens[b]), bool(forced[b]), selfs[b].copy(), cross_rows[b].copy(), ks[b].clone(),
                     vs[b].clone(), hidden[b, -1].clone(), int(ids[b])) for b in range(B)]


def run_rows(sessions, done=None) -> None:
    """Step every session greedily to its end, rows at the same position together (feed_rows); `done(session)`
    is called as each one ends."""
    active = [s for s in sessions if not s.done]
    for s in sessions:
        if done and s.done:
            done(s)
    while active:
        by_pos = defaultdict(list)
        for s in active:
            by_pos[s.cursor].append(s)
        rows = by_pos[min(by_pos)]  # the furthest behind first, so that the positions meet
        tokens = [s.positions[s.cursor].greedy if s.positions else s.translator.config.bos_id for s in rows]
        for s, p in zip(rows, feed_rows(rows, tokens)):  # a session begun without <s> is fed it first
            s._put(p)
        active = [s for s in active if not s.done]
        if done:
            for s in rows:
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
