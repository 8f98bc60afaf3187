"""Greedy decoding with a key/value cache, and the Translator that wraps model + tokenizer."""
from __future__ import annotations

import copy
import dataclasses
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from torch import Tensor

from .attention import KVCache
from .capture import AttentionMaps, AttentionRecorder, HeadAblation, host_arrays, parse_heads

from .checkpoint import load_checkpoint
from .device import resolve_device
from .model import Transformer, padding_mask
from .tokenizer import Tokenizer

MAX_INPUT_CHARS = 2000  # bounded before tokenising; the model's own limit is max_len pieces


def max_new_tokens(src_len: int, max_len: int) -> int:
    return max(1, min(max_len - 1, 2 * src_len + 10))


def pad_batch(seqs: list[list[int]], pad_id: int, device="cpu") -> Tensor:
    """Padded (B, T) ids, built on the host and copied to `device` in one transfer."""
    T = max(len(s) for s in seqs)
    return torch.tensor([list(s) + [pad_id] * (T - len(s)) for s in seqs], dtype=torch.long, device=device)


@torch.inference_mode()
def greedy_decode(model: Transformer, src: Tensor, max_new: Optional[int] = None) -> list[list[int]]:
    """src (B, S) padded ids, on any device -> generated ids per sentence (without BOS, with EOS when reached)."""
    c = model.config
    src = src.to(model.embed.weight.device)  # (B, S): where the model is
    src_mask = padding_mask(src, c.pad_id) if bool((src == c.pad_id).any()) else None  # (B, 1, 1, S)
    memory = model.encode(src, src_mask)  # (B, S, D)
    lengths = (src != c.pad_id).sum(1).tolist()
    limits = [max_new_tokens(n, c.max_len) for n in lengths]
    steps = min(max(limits) if max_new is None else max_new, c.max_len - 1)
    cache = model.new_cache()
    tok = torch.full((src.size(0), 1), c.bos_id, dtype=torch.long, device=src.device)  # (B, 1)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    out = []
    for _ in range(steps):
        h = model.decode(tok, memory, None, src_mask, cache)  # (B, 1, D)
        nxt = model.project(h[:, -1]).argmax(-1)  # (B,) greedy choices
        nxt = torch.where(done, torch.full_like(nxt, c.pad_id), nxt)
        out.append(nxt)
        done |= nxt == c.eos_id
        if bool(done.all()):
            break
        tok = nxt[:, None]  # (B, 1)
    ids = torch.stack(out, 1).tolist() if out else [[] for _ in lengths]  # (B, steps)
    result = []
    for row, limit in zip(ids, limits):
        row = row[:limit]
        result.append(row[:row.index(c.eos_id) + 1] if c.eos_id in row else row)
    return result


def clean_text(text, notes: Optional[list] = None) -> str:
    """Validate and normalise user text: a str, not blank, bounded in length, no control characters.
    What was cut is reported by appending a message to `notes` (when given), never as a warning."""
    if not isinstance(text, str):
        raise ValueError(f"input must be text, got {type(text).__name__}")
    text = text.lstrip()
    if len(text) > MAX_INPUT_CHARS:
        if notes is not None:
            notes.append(f"The input was cut from {len(text)} to {MAX_INPUT_CHARS} characters.")
        text = text[:MAX_INPUT_CHARS]
    # lone surrogates cannot be encoded; control and format characters (NUL, zero-width, bidi marks) carry no words
    text = text.encode("utf-8", "replace").decode("utf-8")
    text = "".join(" " if unicodedata.category(ch) in ("Cc", "Cs") else ch
                   for ch in text if unicodedata.category(ch) != "Cf")
    text = " ".join(text.split())
    if not text:
        raise ValueError("input is empty: type a sentence")
    return text


class Translator:
    """A loaded model + tokenizer on one device. Thread-safe for inference (no shared mutable state)."""

    def __init__(self, model: Transformer, tokenizer: Tokenizer, device="auto", checkpoint_dir: Optional[Path] = None):
        self.device = resolve_device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.config = model.config
        self.checkpoint_dir = checkpoint_dir

    @classmethod
    def load(cls, path=None, device="auto") -> "Translator":
        """A checkpoint directory, or a shipped model's name ("de-en", "en-de"); None: German -> English."""
        from .checkpoint import resolve_checkpoint
        model, tokenizer = load_checkpoint(path)
        return cls(model, tokenizer, device, resolve_checkpoint(path))

    def source_ids(self, text: str, notes: Optional[list] = None) -> list[int]:
        """Cleaned, tokenised source with EOS, truncated to the model's limit. Each cut (characters, pieces)
        appends a human-readable message to `notes` when it is given; nothing is warned."""
        ids = self.tokenizer.encode(clean_text(text, notes))
        if not ids:  # e.g. only '▁' or U+FFFD: nothing the model can read
            raise ValueError("input is empty: type a sentence")
        limit = self.config.max_len - 1
        if len(ids) > limit:
            if notes is not None:
                notes.append(f"The input has {len(ids)} pieces; only the first {limit} are translated "
                             f"(the model's limit).")
            ids = ids[:limit]
        return ids + [self.config.eos_id]

    def translate_ids(self, src_ids: list[list[int]], ablate=None) -> list[list[int]]:
        """`ablate`: (kind, layer, head) triples switched off for this call only, as in `start`."""
        src = pad_batch(src_ids, self.config.pad_id, self.device)  # (B, S)
        with HeadAblation(self.model, ablate):
            return greedy_decode(self.model, src)

    def translate(self, text: str) -> str:
        return self.tokenizer.decode(self.translate_ids([self.source_ids(text)])[0])

    # -- stepping and inspecting
    def start(self, text: str, ablate=None) -> "DecodingSession":
        """Encode `text` once (capturing encoder self-attention) and feed BOS: a session at step 0.
        `ablate`: (kind, layer, head) triples switched off for this session only. What was cut from the
        input is described in `session.notes` (empty when nothing was)."""
        notes: list[str] = []
        session = self.start_ids(self.source_ids(text, notes), ablate)
        session.notes = notes
        return session

    def trajectory(self, text: str, ablate=None, at: int = 0, k: int = 20):
        """Decode `text` greedily to the end and return every step at once, shown at step `at`: a
        `transformer.trajectory.Trajectory` whose `.session` is the DecodingSession (for stepping on)."""
        session = self.start(text, ablate).run()
        session.goto(min(at, len(session.positions) - 1))
        return session.trajectory(k)

    def start_ids(self, src_ids: list[int], ablate=None) -> "DecodingSession":
        heads = parse_heads(self.model, ablate)
        src = torch.tensor([src_ids], dtype=torch.long, device=self.device)  # (1, S)
        with torch.inference_mode():
            with AttentionRecorder(self.model, to_host=False) as rec, HeadAblation(self.model, heads):
                memory = self.model.encode(src)  # (1, S, D)
            encoder_self = rec.stacked("encoder_self")  # (L_enc, H, S, S): one copy to the host
            kv = [block.cross_attn.project_kv(memory) for block in self.model.decoder]
            cross_k = torch.stack([c.k[0] for c in kv])  # (L, H, S, d), on the device
            cross_v = torch.stack([c.v[0] for c in kv])  # (L, H, S, d)
        session = DecodingSession(self, src_ids, encoder_self, cross_k, cross_v)
        session.ablated = heads
        session._append(self.config.bos_id, forced=False)
        return session

    def _feed(self, session: "DecodingSession", token: int, forced: bool) -> "Position":
        return _session_feed(self, session, token, forced)

    def next_probs(self, hidden) -> np.ndarray:
        """(D,) final decoder state, or (T, D) states (a tensor, ideally on this translator's device, or an
        array) -> (V,) or (T, V) next-token probabilities, float32 numpy: one copy to the host."""
        with torch.inference_mode():
            h = torch.as_tensor(hidden, dtype=self.model.embed.weight.dtype, device=self.device)  # (D,) or (T, D)
            return torch.softmax(self.model.project(h[None]).float(), -1)[0].cpu().numpy()  # (V,) or (T, V)

    def target_ids_of(self, target) -> list[int]:
        """Target as text or a list of pieces -> [BOS, ..., EOS] ids."""
        tok, c = self.tokenizer, self.config
        if isinstance(target, str):
            ids = tok.encode(clean_text(target))
        elif isinstance(target, (list, tuple)) and all(isinstance(p, str) for p in target):
            ids = [tok.piece_id(p) for p in target]
            if ids and ids[0] == c.bos_id:
                ids = ids[1:]
            if ids and ids[-1] == c.eos_id:
                ids = ids[:-1]
        else:
            raise ValueError("target must be text or a list of pieces")
        if not ids:
            raise ValueError("target is empty")
        ids = ids[:c.max_len - 2]
        return [c.bos_id] + ids + [c.eos_id]

    @torch.inference_mode()
    def token_probs(self, src_ids: list[int], tgt_ids: list[int], ablate=None) -> np.ndarray:
        """Teacher-forced probability of each tgt_ids[t+1] given tgt_ids[:t+1]: (T-1,) float32."""
        src = torch.tensor([src_ids], dtype=torch.long, device=self.device)  # (1, S)
        tgt = torch.tensor([tgt_ids], dtype=torch.long, device=self.device)  # (1, T)
        with HeadAblation(self.model, parse_heads(self.model, ablate)):
            logits = self.model.project(self.model.decode(tgt[:, :-1], self.model.encode(src)))  # (1, T-1, V)
        probs = torch.softmax(logits[0], -1)  # (T-1, V)
        return probs.gather(1, tgt[0, 1:, None])[:, 0].cpu().numpy()  # (T-1,)

    def attend(self, source, target) -> AttentionMaps:
        """Teacher-forced attention of `target` (text or pieces) given `source` text: one pass."""
        src, tgt = self.source_ids(source), self.target_ids_of(target)
        maps = attend_ids(self.model, src, tgt)
        maps.source_tokens, maps.target_tokens = self.tokenizer.pieces(src), self.tokenizer.pieces(tgt)
        return maps

    def attribute(self, source, target, method: str = "alti"):
        """Teacher-forced attribution (transformer/attribution.py): an Attribution of every target row."""
        from .attribution import translator_attribute
        return translator_attribute(self, source, target, method)

    def translate_batch(self, texts: list[str], batch_size: int = 64, ablate=None) -> list[str]:
        ablate = parse_heads(self.model, ablate)  # checked once, before any work
        srcs = [self.source_ids(t) for t in texts]
        order = sorted(range(len(srcs)), key=lambda i: len(srcs[i]))
        out: list[str] = [""] * len(srcs)
        for b in range(0, len(order), batch_size):
            idx = order[b:b + batch_size]
            for i, ids in zip(idx, self.translate_ids([srcs[i] for i in idx], ablate)):
                out[i] = self.tokenizer.decode(ids)
        return out


@torch.inference_mode()
def attend_ids(model: Transformer, src_ids: list[int], tgt_ids: list[int]):
    """One teacher-forced pass under an AttentionRecorder. tgt_ids start with BOS. -> AttentionMaps."""
    device = model.embed.weight.device
    src = torch.tensor([src_ids], dtype=torch.long, device=device)  # (1, S)
    tgt = torch.tensor([tgt_ids], dtype=torch.long, device=device)  # (1, T)
    with AttentionRecorder(model, to_host=False) as rec:
        memory = model.encode(src)  # (1, S, D)
        model.decode(tgt, memory)  # (1, T, D)
    return rec.maps(len(src_ids), len(tgt_ids))  # one copy to the host


# ----------------------------------------------------------------------------------------------------
# A decoding session: one token at a time, with a KV cache, capturing attention as it goes.

@dataclass(frozen=True, eq=False)
class Position:
    """What the decoder computed for one target position (the query at `token`). Immutable: sessions
    and their forks share Position objects, and never modify one or the tensors in it."""

    token: int  # the id fed at this position (BOS at position 0)
    forced: bool  # chosen by the user rather than by argmax
    self_row: np.ndarray  # (L, H, t+1) decoder self-attention of this query over positions 0..t (host)
    cross_row: np.ndarray  # (L, H, S) cross-attention of this query over the source (host)
    k: Tensor  # (L, H, d_head) this position's self-attention keys, one per layer, on the session's device
    v: Tensor  # (L, H, d_head) and values
    hidden: Tensor  # (D,) final decoder state, on the device: the next-token distribution is project(hidden)
    greedy: int  # argmax of that distribution: the token greedy decoding appends next


class DecodingSession:
    """Greedy decoding of one sentence, one position at a time, with attention captured per step.

    State is token ids, numpy attention rows and, on the translator's device, the keys/values the decoder
    attends to (cross-attention once, self-attention per position) and each position's final state: a step
    uploads one token id and copies its attention rows and greedy choice back in one transfer.
    `positions` is the history computed so far and `cursor` the position shown: back()/goto() move the
    cursor without recomputing, step() moves it forward again along the history (or computes a new
    position at the end), force() replaces the future. Copies share the Translator (never copied or
    pickled) and nothing else; `notes` describes what was cut from the input.
    """

    def __init__(self, translator: "Translator", source_ids: list[int], encoder_self: np.ndarray,
                 cross_k: Tensor, cross_v: Tensor):
        self._translator = translator
        self.source_ids = list(source_ids)
        self.encoder_self = encoder_self  # (L_enc, H, S, S) numpy
        self.cross_k, self.cross_v = cross_k, cross_v  # (L_dec, H, S, d_head) each, on the device
        self.positions: list[Position] = []
        self.cursor = -1
        self.ablated: frozenset = frozenset()  # (kind, layer, head) switched off for this session
        self.limit = max_new_tokens(len(source_ids), translator.config.max_len)
        self.notes: list[str] = []  # human-readable: what was cut from the input (Translator.start)

    # -- copying: the translator is shared, never copied or pickled
    def __deepcopy__(self, memo):
        new = self.__class__.__new__(self.__class__)
        memo[id(self)] = new
        new.__dict__.update({k: v if k == "_translator" else copy.deepcopy(v, memo)
                             for k, v in self.__dict__.items()})
        return new

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_translator"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._translator = None

    def fork(self) -> "DecodingSession":
        """A cheap copy to mutate: positions and the cross-attention keys/values are shared (never
        modified in place), the lists are not."""
        new = self.__class__.__new__(self.__class__)
        new.__dict__.update(self.__dict__)
        new.positions = list(self.positions)
        new.notes = list(self.notes)
        return new

    def bind(self, translator: "Translator") -> "DecodingSession":
        """Attach a Translator (after unpickling); the device state moves to its device if it is elsewhere."""
        self._translator = translator
        dev = translator.device
        if not _on(self.cross_k, dev):  # all of the device state is where cross_k is
            self.cross_k, self.cross_v = self.cross_k.to(dev), self.cross_v.to(dev)
            self.positions = [dataclasses.replace(p, k=p.k.to(dev), v=p.v.to(dev), hidden=p.hidden.to(dev))
                              for p in self.positions]
        return self

    @property
    def translator(self) -> "Translator":
        if self._translator is None:
            raise RuntimeError("this session is not bound to a Translator: call session.bind(translator)")
        return self._translator

    # -- what is visible at the cursor
    @property
    def target_ids(self) -> list[int]:
        return [p.token for p in self.positions[:self.cursor + 1]]

    @property
    def source_tokens(self) -> list[str]:
        return self.translator.tokenizer.pieces(self.source_ids)

    @property
    def target_tokens(self) -> list[str]:
        return self.translator.tokenizer.pieces(self.target_ids)

    @property
    def translation(self) -> str:
        return self.translator.tokenizer.decode(self.target_ids)

    @property
    def step_index(self) -> int:
        """Number of tokens generated so far (BOS not counted)."""
        return self.cursor

    @property
    def done(self) -> bool:
        ids = self.target_ids
        return ids[-1] == self.translator.config.eos_id or len(ids) - 1 >= self.limit

    @property
    def attention(self) -> AttentionMaps:
        rows = self.positions[:self.cursor + 1]
        T = len(rows)
        L, H = rows[0].self_row.shape[:2]
        dec = np.zeros((L, H, T, T), dtype=np.float32)  # (L, H, T, T)
        for t, p in enumerate(rows):
            dec[:, :, t, :t + 1] = p.self_row
        cross = np.stack([p.cross_row for p in rows], axis=2)  # (L, H, T, S)
        return AttentionMaps(self.encoder_self, dec, cross, self.source_tokens, self.target_tokens)

    def inside(self, kind: str, layer: int, head: int, norms: bool = False):
        """Inside one head (0-based layer and head, like AttentionMaps.figure) at the cursor: a HeadInside
        with q, k, v, scores (q·kᵀ/√d_k, before masking), mask, weights, out (weights·v) and contribution
        (‖α v W_Oʰ‖), numpy arrays from one teacher-forced pass with hooks (transformer/inside.py).
        `norms=True` adds ‖v W_Oʰ‖ for every head of every kind (`.norms`)."""
        from .inside import session_inside
        return session_inside(self, kind, layer, head, norms)

    def trajectory(self, k: int = 20):
        """Every computed position at once, shown at the cursor: a `transformer.trajectory.Trajectory` (maps,
        top-k after each position, pieces, texts, word spans, the head atlas's roles): what a view needs."""
        from .trajectory import build
        return build(self, k)

    def attribution(self, method: str = "alti"):
        """Attribution (transformer/attribution.py) of rows 0..cursor, the session's switched-off heads off."""
        from .attribution import session_attribution
        return session_attribution(self, method)

    def view(self, words: bool = False):
        """The step at the cursor as a view shows it (maps of rows 0..cursor, pieces or merged into words):
        a `transformer.trajectory.StepView`."""
        from .trajectory import step_view
        return step_view(self, words)

    def _position(self, position: Optional[int]) -> Position:
        if position is None:
            return self.positions[self.cursor]
        if not isinstance(position, (int, np.integer)) or isinstance(position, bool) \
                or not 0 <= position < len(self.positions):
            raise ValueError(f"position must be an integer from 0 to {len(self.positions) - 1}, got {position!r}")
        return self.positions[int(position)]

    def next_distribution(self, position: Optional[int] = None) -> np.ndarray:
        """Probabilities of the token after `position` (any computed one; default: the cursor), (V,) float32."""
        return self.translator.next_probs(self._position(position).hidden)

    def history_probs(self) -> np.ndarray:
        """Probabilities of the token after every position of the history, (T, V) float32: the states are
        joined on the device and projected at once, with one copy to the host."""
        return self.translator.next_probs(torch.stack([p.hidden for p in self.positions]))  # (T, V)

    def topk(self, k: int = 5, position: Optional[int] = None) -> list[tuple[str, float]]:
        """The k most probable pieces after `position` (any computed one; default: the cursor), with their
        probabilities, most probable first (ties: lower id first)."""
        V = self.translator.config.vocab_size
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= min(V, TOPK_MAX):
            raise ValueError(f"k must be an integer from 1 to {min(V, TOPK_MAX)}, got {k!r}")
        probs = self.next_distribution(position)
        idx = np.argsort(-probs, kind="stable")[:k]
        return [(self.translator.tokenizer.piece(i), float(probs[i])) for i in idx]

    # -- moving
    def step(self) -> bool:
        """Advance one token (along the history if there is one, else greedily). False when done."""
        if self.done:
            return False
        if self.cursor + 1 < len(self.positions):
            self.cursor += 1
        else:
            self._append(self.positions[self.cursor].greedy, forced=False)
        return True

    def run(self) -> "DecodingSession":
        while self.step():
            pass
        return self

    def back(self) -> bool:
        if self.cursor <= 0:
            return False
        self.cursor -= 1
        return True

    def goto(self, i: int) -> None:
        """Show the state after i generated tokens (0: only BOS); i must be within the history."""
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(self.positions):
            raise ValueError(f"step index must be an integer from 0 to {len(self.positions) - 1}, got {i!r}")
        self.cursor = i

    def force(self, piece) -> None:
        """Append `piece` (a piece string or an id) instead of the greedy choice; the old future is dropped."""
        if self.done:
            raise ValueError("decoding has finished at this step; step back before forcing a piece")
        tok = self.translator.tokenizer
        if isinstance(piece, str):
            token = tok.piece_id(piece)
        elif isinstance(piece, (int, np.integer)) and not isinstance(piece, bool) and 0 <= piece < len(tok):
            token = int(piece)
        else:
            raise ValueError(f"not a piece or a piece id: {piece!r}")
        if token in (tok.pad_id, tok.bos_id):
            raise ValueError(f"cannot force the special piece {tok.piece(token)!r}")
        self._append(token, forced=True)

    def follow(self, tokens) -> "DecodingSession":
        """Teacher forcing: append these token ids after the cursor as they are given, whatever the model would
        choose (each position's `greedy` still says what it would have chosen; `forced` stays False: the pieces
        were given, not chosen by a user). The old future is dropped; the limit grows to fit them, up to the
        model's max_len - 1 positions; following stops at EOS. Returns self, its cursor on the last one."""
        tokens = [int(t) for t in tokens]
        tok = self.translator.tokenizer
        if any(t in (tok.pad_id, tok.bos_id) or not 0 <= t < len(tok) for t in tokens):
            raise ValueError("follow needs piece ids of the vocabulary other than <pad> and <s>")
        self.limit = max(self.limit, min(self.translator.config.max_len - 1, self.cursor + len(tokens)))
        for t in tokens:
            if self.done:
                break
            self._append(t, forced=False)
        return self

    def _append(self, token: int, forced: bool) -> None:
        del self.positions[self.cursor + 1:]
        self.positions.append(self.translator._feed(self, token, forced))
        self.cursor += 1


TOPK_MAX = 50


def _on(t: Tensor, device: torch.device) -> bool:
    return t.device.type == device.type and (device.index is None or t.device.index == device.index)


@torch.inference_mode()
def _session_feed(translator: "Translator", session: DecodingSession, token: int, forced: bool) -> Position:
    """Run the decoder on one new position with the session's cache, under an AttentionRecorder.

    The cache is built on the device from the session's tensors; the step uploads the token id and makes
    one copy to the host (its attention rows and its greedy choice, joined)."""
    model, dev = translator.model, translator.device
    prev = session.positions[:session.cursor + 1]
    if prev:
        keys = torch.stack([p.k for p in prev], 2)  # (L, H, t, d)
        values = torch.stack([p.v for p in prev], 2)  # (L, H, t, d)
    cache = model.new_cache()
    for layer, c in enumerate(cache):
        c["cross"] = KVCache(session.cross_k[layer, None], session.cross_v[layer, None])  # (1, H, S, d)
        if prev:
            c["self"] = KVCache(keys[layer, None], values[layer, None])  # (1, H, t, d)
    tgt = torch.tensor([[token]], dtype=torch.long, device=dev)  # (1, 1)
    with AttentionRecorder(model, to_host=False) as rec, HeadAblation(model, session.ablated):
        h = model.decode(tgt, None, None, None, cache)  # (1, 1, D): one sentence, no padding to mask
    greedy = model.project(h[:, -1]).argmax(-1)  # (1,)
    k = torch.stack([c["self"].k[0, :, -1] for c in cache])  # (L, H, d): its own storage, not the cache's
    v = torch.stack([c["self"].v[0, :, -1] for c in cache])  # (L, H, d)
    # the greedy id travels with the rows: its int64 bits viewed as two float32 (copied bit for bit), placed
    # first so that the host buffer's start, 8-byte aligned, can be viewed back as an int64
    choice, self_row, cross_row = host_arrays(greedy.view(torch.float32),  # (2,)
                                              rec.stacked_tensor("decoder_self")[:, :, 0],  # (L, H, t+1)
                                              rec.stacked_tensor("cross")[:, :, 0])  # (L, H, S)
    return Position(token, forced, self_row, cross_row, k, v, h[0, -1], int(choice.view(np.int64)[0]))
