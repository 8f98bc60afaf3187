"""Beam search over one sentence with the model's KV cache, keeping the whole search tree for display.

The live beams run as one batch: after each step the self-attention cache is reordered (index_select
on the batch axis) to follow the surviving beams; the cross-attention keys/values are computed once
and expanded. Scores are sums of log-probabilities; a finished hypothesis (ending with EOS) is ranked
by score / length ** length_penalty, length counting the EOS. Beam size 1 is exactly greedy decoding.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import torch

from ..model.attention import KVCache
from ..model.model import Transformer
from .decoding import max_new_tokens
from .step import decoder_position

MAX_BEAM = 8


@dataclass
class Hypothesis:
    ids: list[int]  # generated ids, without BOS, with EOS when finished
    score: float  # sum of token_logprobs
    normalized: float  # score / len(ids) ** length_penalty: the ranking key
    token_logprobs: list[float]
    finished: bool
    path: list[tuple[int, int]] = field(default_factory=list)  # (step, node index) from the root (0, 0)


@dataclass
class BeamNode:
    step: int  # 0 for the BOS root, t for the t-th generated token
    token: int
    parent: int  # index into tree[step - 1]; -1 for the root
    score: float  # cumulative log-probability of the prefix ending here
    rank: int  # position among this step's nodes, best score first (equals the node's index)
    alive: bool  # a live beam; False for a finished hypothesis (token is EOS)


@dataclass
class BeamResult:
    hypotheses: list[Hypothesis]  # best first
    tree: list[list[BeamNode]]  # tree[step]: the nodes kept at that step; tree[0] is the BOS root
    source_ids: list[int]

    @property
    def best(self) -> Hypothesis:
        return self.hypotheses[0]


def check_beam_size(beam_size) -> int:
    if not isinstance(beam_size, numbers.Integral) or isinstance(beam_size, bool) or not 1 <= beam_size <= MAX_BEAM:
        raise ValueError(f"beam size must be an integer from 1 to {MAX_BEAM}, got {beam_size!r}")
    return int(beam_size)


def _path(tree: list[list[BeamNode]], step: int, index: int) -> list[tuple[int, int]]:
    path = []
    while index >= 0:
        path.append((step, index))
        index, step = tree[step][index].parent, step - 1
    return path[::-1]


def _bound(score: float, length: int, length_penalty: float) -> float:
    """The best normalized score a live beam of `length` tokens is taken to reach. For length_penalty <= 0
    it is exact (its final length is at least length + 1 and its score can only fall); for > 0 it is the
    usual heuristic of the beam's normalized score at its current length."""
    return score / (length if length_penalty > 0 else length + 1) ** length_penalty


@torch.inference_mode()
def beam_search(model: Transformer, src_ids: list[int], beam_size: int, max_new: int | None = None,
                length_penalty: float = 1.0) -> BeamResult:
    """Beam search for one sentence: src_ids (with EOS, no padding) -> BeamResult.

    Stops when beam_size hypotheses are finished and no live beam can beat the best finished one,
    or after max_new tokens (then the live beams join the ranking, unfinished). Returns beam_size
    hypotheses (fewer only with a vocabulary smaller than the beam). The model must be in eval mode
    (ValueError otherwise); its mode is never changed.
    """
    K, c = check_beam_size(beam_size), model.config
    src_ids = [int(i) for i in src_ids]
    if not src_ids:
        raise ValueError("src_ids is empty")
    limit = max_new_tokens(len(src_ids), c.max_len) if max_new is None else min(int(max_new), c.max_len - 1)
    if limit < 1:
        raise ValueError(f"max_new must be at least 1, got {max_new!r}")
    if model.training:  # the model is shared: its mode is its owner's to set, never ours to flip
        raise ValueError("beam search needs the model in eval mode (model.eval())")
    return _search(model, src_ids, K, limit, float(length_penalty))


def _search(model: Transformer, src_ids: list[int], K: int, limit: int, lp: float) -> BeamResult:
    c, device = model.config, next(model.parameters()).device
    src = torch.tensor([src_ids], dtype=torch.long, device=device)  # (1, S)
    memory = model.encode(src)  # (1, S, D)
    cross = model.cross_kv(memory)  # (1, H, S, d) each
    cache = model.new_cache()
    tree = [[BeamNode(0, c.bos_id, -1, 0.0, 0, True)]]
    live = [([], [], 0.0, 0)]  # (ids, token log-probs, score, node index in tree[-1]) per batch row
    finished: list[Hypothesis] = []
    tok = torch.full((1, 1), c.bos_id, dtype=torch.long, device=device)  # (n, 1)
    stopped = False
    for step in range(1, limit + 1):
        n = len(live)
        for layer, kv in zip(cache, cross):
            layer["cross"] = KVCache(kv.k.expand(n, -1, -1, -1), kv.v.expand(n, -1, -1, -1))  # (n, H, S, d)
        h = decoder_position(model, tok, cache)  # (n, D)
        logp = torch.log_softmax(model.project(h).double(), -1)  # (n, V)
        prev = torch.tensor([b[2] for b in live], dtype=torch.float64, device=device)  # (n,)
        scores = (logp + prev[:, None]).flatten()  # (n * V,)
        top, flat = scores.topk(min(2 * K, scores.numel()))  # (2K,), (2K,)
        V = logp.size(1)
        # scores, flat indices (exact in float64) and token log-probs of the candidates: one copy to the host
        picked = torch.stack([top, flat.double(), logp.flatten()[flat]]).tolist()  # (3, 2K)
        nodes, nxt, rows = [], [], []
        for cand, (s, f, lp_tok) in enumerate(zip(*picked)):
            if len(nxt) == K:
                break
            row, token = divmod(int(f), V)
            ids, lps, _, parent = live[row]
            if token == c.eos_id:
                if cand >= K:
                    continue  # an EOS outside the top K does not finish a hypothesis
                nodes.append(BeamNode(step, token, parent, s, len(nodes), False))
                finished.append(Hypothesis(ids + [token], s, s / step ** lp, lps + [lp_tok], True,
                                           _path(tree, step - 1, parent) + [(step, len(nodes) - 1)]))
            else:
                nodes.append(BeamNode(step, token, parent, s, len(nodes), True))
                nxt.append((ids + [token], lps + [lp_tok], s, len(nodes) - 1))
                rows.append(row)
        tree.append(nodes)
        live = nxt
        if len(finished) >= K:
            best = max(hyp.normalized for hyp in finished)
            stopped = all(_bound(b[2], step, lp) <= best for b in live)
        if stopped or not live or step == limit:
            break
        idx = torch.tensor(rows, dtype=torch.long, device=device)  # (n',)
        for layer in cache:
            kv = layer["self"]
            layer["self"] = KVCache(kv.k.index_select(0, idx), kv.v.index_select(0, idx))  # (n', H, t, d) each
        tok = torch.tensor([[b[0][-1]] for b in live], dtype=torch.long, device=device)  # (n', 1)
    pool = list(finished)
    if not stopped:
        last = len(tree) - 1
        pool += [Hypothesis(ids, s, s / len(ids) ** lp, lps, False, _path(tree, last, node))
                 for ids, lps, s, node in live]
    pool.sort(key=lambda hyp: -hyp.normalized)  # stable: ties keep the order they were found in
    return BeamResult(pool[:K], tree, src_ids)


def beam_translate_batch(translator, texts: list[str], beam: int, batch_size: int = 16,
                         length_penalty: float = 1.0) -> list[str]:
    """Best beam hypothesis per text. Runs sentence by sentence; batch_size is accepted for the
    interface of Translator.translate_batch and not used."""
    check_beam_size(beam)
    out = []
    for text in texts:
        result = beam_search(translator.model, translator.source_ids(text), beam, length_penalty=length_penalty)
        out.append(translator.tokenizer.decode(result.best.ids))
    return out
