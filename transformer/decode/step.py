"""One decoder position for some rows: the one place a position is computed.

`decoder_position(model, tokens, cache, memory_mask)` runs the model's own decoder modules over one new position of
B rows with their key/value cache (`model.decode`) and returns the rows' final states. Every decoding calls it:
`greedy_decode` and beam search (transformer/decode/decoding.py, beam.py) directly, and sessions, one or several
(transformer/decode/session.py's `advance`), through `feed_rows`, which reads each row's attention with
`AttentionRecorder`'s forward hooks and switches its heads off with `HeadAblation`'s pre-hooks, as every other pass of
the model does.

Rows of a pass are at one position (so their self-attention keys have one length); their sources may differ in
length: the cross-attention keys and values are padded to the longest with zeros, and a memory mask keeps the padding
out of the softmax. A row computed with others therefore equals the row computed alone up to the rounding of a batched
matrix product and of a padded softmax: within `TOLERANCE` (relative, per map, probability and state).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..interpret.capture import AttentionRecorder, HeadAblation, host_arrays
from ..model.attention import KVCache

# How far a row computed with others may lie from the same row computed alone, relative to the largest magnitude of
# what is compared (a map, a probability row, a state), for float32 without TF32: the rounding of B rows in one matrix
# product (another summation order than one row's) and of a padded softmax, carried through the steps. Measured on the
# CPU at <= 2e-6 (python -m benchmarks.batching: 300 test sentences in batches of 32); this is that bound with a
# margin. CUDA's cuBLAS picks other kernels for B rows than for one, with other summation orders: CUDA_TOLERANCE.
TOLERANCE = 1e-5
CUDA_TOLERANCE = 1e-4


def tolerance(device) -> float:
    """The tolerance of batched against alone on this device (TOLERANCE on the CPU, CUDA_TOLERANCE on CUDA)."""
    return CUDA_TOLERANCE if torch.device(device).type == "cuda" else TOLERANCE


@dataclass(frozen=True, eq=False)
class Position:
    """What the decoder computed for one target position (the query at `token`). Immutable: sessions
    and their forks share Position objects, and never modify one or the tensors in it. Its tensors are its own
    (never views of a batch's): a session keeps only what it holds."""

    token: int  # the id fed at this position (BOS at position 0)
    forced: bool  # chosen by the user rather than by argmax
    self_row: np.ndarray  # (L, H, t+1) decoder self-attention of this query over positions 0..t (host)
    cross_row: np.ndarray  # (L, H, S) cross-attention of this query over the source (host)
    k: Tensor  # (L, H, d_head) this position's self-attention keys, one per layer, on the session's device
    v: Tensor  # (L, H, d_head) and values
    hidden: Tensor  # (D,) final decoder state, on the device: the next-token distribution is project(hidden)
    greedy: int  # argmax of that distribution: the token greedy decoding appends next


def decoder_position(model, tokens: Tensor, cache: list, memory_mask: Tensor | None = None) -> Tensor:
    """tokens (B, 1) fed after the positions in `cache` (one dict per decoder layer, "cross" set, "self" the keys and
    values so far or absent at the first position) -> the rows' final decoder states (B, D). The cache is extended
    by this position. memory_mask (B, 1, 1, S) bool: which cross-attention keys are real (None: all)."""
    return model.decode(tokens, None, None, memory_mask, cache)[:, -1]  # (B, D)


def cross_cache(model, memory: Tensor) -> list:
    """A decoding cache holding each decoder layer's cross-attention keys and values of `memory` (B, S, D)."""
    return [{"cross": kv} for kv in model.cross_kv(memory)]  # (B, H, S, d) each


def next_probs(model, hidden) -> np.ndarray:
    """(D,) final decoder state, or (T, D) states (a tensor, ideally on the model's device, or an array) -> (V,) or
    (T, V) next-token probabilities, float32 numpy: one copy to the host."""
    weight = model.output_embedding  # (V, D)
    with torch.inference_mode():
        h = torch.as_tensor(hidden, dtype=weight.dtype, device=weight.device)  # (D,) or (T, D)
        return torch.softmax(model.project(h[None]).float(), -1)[0].cpu().numpy()  # (V,) or (T, V)


def _padded(tensors: list[Tensor], S: int) -> Tensor:
    """Tensors (L, H, S_b, d) -> (B, L, H, S, d), zero-padded on the key axis."""
    return torch.stack([t if t.size(2) == S else F.pad(t, (0, 0, 0, S - t.size(2))) for t in tensors])


class Rows:
    """The cache of some sessions of one translator at one position, as `decoder_position` reads and extends it:
    kept by `session.decode` from one pass to the next, so that a pass stacks nothing again; `keep(sessions)` narrows
    it to some of its rows (those not done)."""

    def __init__(self, sessions, cache: list | None = None, memory_mask: Tensor | None = None):
        tr = sessions[0].translator
        self.sessions, self.t = list(sessions), sessions[0].cursor + 1
        if any(s.translator is not tr or s.cursor + 1 != self.t for s in sessions):
            raise ValueError("feed_rows needs sessions of one translator at the same position")
        if cache is not None:
            self.cache, self.memory_mask = cache, memory_mask
            return
        S = [s.cross_k.size(2) for s in sessions]
        ck, cv = _padded([s.cross_k for s in sessions], max(S)), _padded([s.cross_v for s in sessions], max(S))
        self.memory_mask = None
        if min(S) != max(S):  # (B, 1, 1, S): True where a key is a row's own
            self.memory_mask = torch.arange(max(S), device=tr.device) < torch.tensor(S, device=tr.device)[:, None]
            self.memory_mask = self.memory_mask[:, None, None, :]
        self.cache = [{"cross": KVCache(ck[:, i], cv[:, i])} for i in range(ck.size(1))]  # (B, H, S, d)
        if self.t:
            keys = torch.stack([torch.stack([p.k for p in s.positions[:self.t]], 2) for s in sessions])  # (B,L,H,t,d)
            values = torch.stack([torch.stack([p.v for p in s.positions[:self.t]], 2) for s in sessions])
            for i, c in enumerate(self.cache):
                c["self"] = KVCache(keys[:, i], values[:, i])  # (B, H, t, d)

    def holds(self, sessions) -> bool:
        """These sessions are some of this one's rows, still at its position."""
        mine = {id(s) for s in self.sessions}
        return all(id(s) in mine for s in sessions) and sessions[0].cursor + 1 == self.t

    def keep(self, sessions) -> Rows:
        """These rows only (some of this one's, in the same order), their cache taken from here."""
        if [id(s) for s in sessions] == [id(s) for s in self.sessions]:
            return self
        where = {id(s): b for b, s in enumerate(self.sessions)}
        idx = torch.tensor([where[id(s)] for s in sessions], device=sessions[0].translator.device)  # (B',)
        cache = [{k: KVCache(kv.k.index_select(0, idx), kv.v.index_select(0, idx)) for k, kv in c.items()}
                 for c in self.cache]
        mask = None if self.memory_mask is None else self.memory_mask.index_select(0, idx)
        return Rows(sessions, cache, mask)


@torch.inference_mode()
def feed_rows(sessions, tokens: list[int], forced: list[bool] | None = None,
              rows: Rows | None = None) -> list[Position]:
    """The Position each session computes next on `tokens` (the one it is fed), for sessions of one translator
    whose cursors are at one position: one pass of the decoder's modules over their rows (`decoder_position`), each
    row's attention read by AttentionRecorder's hooks and its own heads switched off by HeadAblation's pre-hooks; one
    upload of the tokens and one copy to the host for all rows. Changes no session (session.advance does); `rows`,
    when given, is for these very sessions and is moved on to the new position."""
    rows = Rows(sessions) if rows is None else rows
    if [id(s) for s in rows.sessions] != [id(s) for s in sessions] or rows.t != sessions[0].cursor + 1:
        raise ValueError("feed_rows was given the rows of other sessions")
    tr = sessions[0].translator
    model, B, t = tr.model, len(sessions), rows.t
    forced = forced or [False] * B
    tgt = torch.tensor([[int(tok)] for tok in tokens], dtype=torch.long, device=tr.device)  # (B, 1)
    with AttentionRecorder(model, to_host=False) as rec, HeadAblation(model, rows=[s.ablated for s in sessions]):
        h = decoder_position(model, tgt, rows.cache, rows.memory_mask)  # (B, D)
    greedy = model.project(h).argmax(-1)  # (B,)
    self_w = torch.stack([calls[0][:, :, 0] for calls in rec.calls["decoder_self"]], 1)  # (B, L, H, t+1)
    cross_w = torch.stack([calls[0][:, :, 0] for calls in rec.calls["cross"]], 1)  # (B, L, H, S)
    # the one copy to the host: the greedy ids (their int64 bits as float32 pairs, first, so that the buffer's
    # 8-byte aligned start views back as int64) and every row's attention rows
    choice, selfs, crosses = host_arrays(greedy.view(torch.float32), self_w, cross_w)
    ids = choice.view(np.int64)
    ks = torch.stack([c["self"].k[:, :, -1] for c in rows.cache], 1)  # (B, L, H, d): this position's keys
    vs = torch.stack([c["self"].v[:, :, -1] for c in rows.cache], 1)
    rows.t = t + 1
    own = (lambda x: x) if B == 1 else Tensor.clone  # a row's tensors its own storage, never the batch's
    return [Position(int(tokens[b]), bool(forced[b]), selfs[b].copy(), crosses[b, :, :, :s.cross_k.size(2)].copy(),
                     own(ks[b]), own(vs[b]), own(h[b]), int(ids[b])) for b, s in enumerate(sessions)]
