"""Greedy decoding with a key/value cache, and the Translator that wraps model + tokenizer.

Stepping through one sentence, one position at a time, is transformer/decode/session.py's DecodingSession
(`Translator.start` makes one); DecodingSession, Position and max_new_tokens can be imported from here too."""
from __future__ import annotations

import unicodedata
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from ..interpret.capture import AttentionMaps, AttentionRecorder, HeadAblation, parse_heads
from ..model.checkpoint import load_checkpoint
from ..model.device import resolve_device
from ..model.metrics import read_source_lengths
from ..model.model import Transformer, padding_mask
from ..model.protocol import model_device
from ..model.tokenizer import Tokenizer
from .batching import Batcher
from .session import TOPK_MAX, DecodingSession, Script, done_at, follow_ids, max_new_tokens  # noqa: F401
from .step import Position, cross_cache, decoder_position, next_probs  # noqa: F401 (Position re-exported)

MAX_INPUT_CHARS = 2000  # bounded before tokenising; the model's own limit is max_len pieces


def pad_batch(seqs: list[list[int]], pad_id: int, device="cpu") -> Tensor:
    """Padded (B, T) ids, built on the host and copied to `device` in one transfer."""
    T = max(len(s) for s in seqs)
    return torch.tensor([list(s) + [pad_id] * (T - len(s)) for s in seqs], dtype=torch.long, device=device)


@torch.inference_mode()
def greedy_decode(model: Transformer, src: Tensor, max_new: int | None = None) -> list[list[int]]:
    """src (B, S) padded ids, on any device -> generated ids per sentence (without BOS, with EOS when reached): each
    row ends where `done_at` says, at </s> or its limit (max_new_tokens of its source's length, at most `max_new`)."""
    c = model.config
    src = src.to(model_device(model))  # (B, S): where the model is
    src_mask = padding_mask(src, c.pad_id) if bool((src == c.pad_id).any()) else None  # (B, 1, 1, S)
    memory = model.encode(src, src_mask)  # (B, S, D)
    limits = [max_new_tokens(n, c.max_len) for n in (src != c.pad_id).sum(1).tolist()]
    limits = limits if max_new is None else [min(n, max_new) for n in limits]
    cache = cross_cache(model, memory)
    tok = torch.full((src.size(0), 1), c.bos_id, dtype=torch.long, device=src.device)  # (B, 1)
    limit = torch.tensor(limits, device=src.device)  # (B,)
    ends = torch.zeros_like(limit)  # (B,) the position each row ends at (0: not yet)
    out = []
    for t in range(1, max(limits) + 1):
        h = decoder_position(model, tok, cache, src_mask)  # (B, D)
        tok = model.project(h).argmax(-1, keepdim=True)  # (B, 1) the greedy choices, at position t
        out.append(tok)
        ends = torch.where((ends == 0) & done_at(t, tok[:, 0], limit, c.eos_id), t, ends)
        if bool((ends > 0).all()):
            break
    rows = torch.cat(out + [ends[:, None]], 1).tolist()  # (B, t + 1): the ids, then where each row ends; one copy
    return [row[:row[-1]] for row in rows]


def clean_text(text, notes: list | None = None) -> str:
    """Validate and normalise user text: a str, not blank, bounded in length, no control characters.
    What was cut is reported by appending a message to `notes` (when given), never as a warning."""
    if not isinstance(text, str):
        raise ValueError(f"input must be text, got {type(text).__name__}")  # noqa: TRY004 (bad input: ValueError)
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

    origin: str | None = None  # where a model not ours came from (transformer/hf: its folder or hf:owner/name)
    name: str | None = None  # its name (the folder's or the hub's), the picker's key with "hf-" before it

    @property
    def key(self) -> str:
        """The model's key in the app's picker and links: 'de-en' for ours, 'hf-<name>' for another's."""
        return self.config.direction if self.name is None else f"hf-{self.name}"

    def __init__(self, model: Transformer, tokenizer: Tokenizer, device="auto", checkpoint_dir: Path | None = None):
        self.device = resolve_device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.config = model.config
        self.checkpoint_dir = checkpoint_dir
        self.source_lengths = read_source_lengths(checkpoint_dir)  # what it learned from (None: not recorded)
        # decodes sessions of concurrent callers together, each as alone (within step.TOLERANCE, the same pieces); off
        # until turned on (the app does: attention_lens/shell/components.py BATCHING), so that a library user's
        # decoding is the session's own
        self.batcher = Batcher()

    @classmethod
    def load(cls, path=None, device="auto") -> Translator:
        """A checkpoint directory, or a shipped model's name ("de-en", "en-de"); None: German -> English."""
        from ..model.checkpoint import resolve_checkpoint
        model, tokenizer = load_checkpoint(path)
        return cls(model, tokenizer, device, resolve_checkpoint(path))

    def source_ids(self, text: str, notes: list | None = None) -> list[int]:
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
    def start(self, text: str, ablate=None) -> DecodingSession:
        """Encode `text` once (capturing encoder self-attention) and feed BOS: a session at step 0.
        `ablate`: (kind, layer, head) triples switched off for this session only. What was cut from the
        input is described in `session.notes` (empty when nothing was)."""
        notes: list[str] = []
        session = self.start_ids(self.source_ids(text, notes), ablate)
        session.notes = notes
        return session

    def trajectory(self, text: str, ablate=None, at: int = 0, k: int = 20):
        """Decode `text` greedily to the end and return every step at once, shown at step `at`: a
        `transformer.decode.trajectory.Trajectory` whose `.session` is the DecodingSession (for stepping on)."""
        session = self.decode(text, ablate)
        session.goto(min(at, len(session.positions) - 1))
        traj = session.trajectory(k)
        traj.caveats = self.caveats(text, traj.source_ids, traj.ids)
        return traj

    def decode(self, text: str, ablate=None) -> DecodingSession:
        """`start(text, ablate).run()`: the session decoded greedily to its end, in one batch with other threads'
        sentences when `self.batcher` is on (transformer/decode/batching.py: as alone, within step.TOLERANCE)."""
        self.batcher.arrive()  # a batch starting now waits (briefly) for this sentence
        try:
            notes: list[str] = []
            session = self.start_ids(self.source_ids(text, notes), ablate, first=False)  # <s>: by the batch, or run
            session.notes = notes
        except BaseException:
            self.batcher.arrive(-1)
            raise
        return self.batcher.run(session, len(session.source_ids), arrived=True)

    def replays(self, source_ids: list[int], jobs: list[tuple]) -> list[DecodingSession]:
        """One session on `source_ids` per job (heads switched off, pieces, stop), each computed from <s> to its end as
        its Script(pieces, stop) says (`pieces` {position: (token id, forced)}: fed there instead of the greedy choice,
        the limit grown to reach its last one; `stop`: the last position, None: to </s> or the limit); all in one
        batch, with other threads' sessions, when `self.batcher` is on: as start_ids(...) stepped alone (within
        step.TOLERANCE, the same pieces)."""
        heads = [parse_heads(self.model, h) for h, _, _ in jobs]  # bad input fails here, before any work
        scripts = [Script({int(i): (int(t), bool(f)) for i, (t, f) in (pieces or {}).items()}, stop)
                   for _, pieces, stop in jobs]
        for script in scripts:
            follow_ids(self, [t for t, _ in script.pieces.values()])
        sessions = [self.start_ids(source_ids, off, first=False) for off in heads]
        return self.batcher.run_all(sessions, [len(source_ids)] * len(jobs), scripts)

    def follow(self, source_ids: list[int], tokens, ablate=None) -> DecodingSession:
        """`start_ids(source_ids, ablate).follow(tokens)` (teacher forcing, e.g. a reference translation, step by
        step), in one batch with other threads' sessions when `self.batcher` is on (within step.TOLERANCE)."""
        heads = parse_heads(self.model, ablate)  # bad input fails here, before any work
        tokens = follow_ids(self, tokens)
        session = self.start_ids(source_ids, heads, first=False)
        return self.batcher.run(session, len(source_ids), Script.given(session, tokens))

    def finish(self, session: DecodingSession) -> DecodingSession:
        """`session.finish()` (greedily from its cursor to its end, the positions after it dropped), in one batch with
        other threads' sessions when `self.batcher` is on. Returns the session."""
        return self.batcher.run(session, len(session.source_ids))

    def caveats(self, text: str, source_ids: list[int], output_ids: list[int]) -> list[dict]:
        """What to say beside this translation (transformer.decode.caveats): too long, repeating, another language,
        unknown characters. `source_ids` as source_ids() gave them (with </s>); `output_ids` with or without
        <s>/</s>."""
        from .caveats import caveats
        special = (self.config.bos_id, self.config.eos_id, self.config.pad_id)
        out = self.tokenizer.pieces([i for i in output_ids if i not in special])
        n_src = len([i for i in source_ids if i not in special])
        return caveats(text, n_src, out, self.tokenizer, self.config.src_lang, self.source_lengths)

    def start_ids(self, src_ids: list[int], ablate=None, first: bool = True) -> DecodingSession:
        """A session on `src_ids` (encoded, with its cross-attention keys and values) at its first position (<s>);
        `first=False`: without it, for a batch to compute with the others' (its first step() computes it alone)."""
        heads = parse_heads(self.model, ablate)
        src = torch.tensor([src_ids], dtype=torch.long, device=self.device)  # (1, S)
        with torch.inference_mode():
            with AttentionRecorder(self.model, to_host=False) as rec, HeadAblation(self.model, heads):
                memory = self.model.encode(src)  # (1, S, D)
            encoder_self = rec.stacked("encoder_self")  # (L_enc, H, S, S): one copy to the host
            kv = self.model.cross_kv(memory)  # (1, H, S, d) per decoder layer
            cross_k = torch.stack([c.k[0] for c in kv])  # (L, H, S, d), on the device
            cross_v = torch.stack([c.v[0] for c in kv])  # (L, H, S, d)
        session = DecodingSession(self, src_ids, encoder_self, cross_k, cross_v)
        session.ablated = heads
        if first:
            session.advance(self.config.bos_id)
        return session

    def next_probs(self, hidden) -> np.ndarray:
        """(D,) final decoder state, or (T, D) states (a tensor, ideally on this translator's device, or an
        array) -> (V,) or (T, V) next-token probabilities, float32 numpy: one copy to the host (step.next_probs)."""
        return next_probs(self.model, hidden)

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
        """Teacher-forced attribution (transformer/interpret/attribution.py): an Attribution of every target row."""
        from ..interpret.attribution import translator_attribute
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
    device = model_device(model)
    src = torch.tensor([src_ids], dtype=torch.long, device=device)  # (1, S)
    tgt = torch.tensor([tgt_ids], dtype=torch.long, device=device)  # (1, T)
    with AttentionRecorder(model, to_host=False) as rec:
        memory = model.encode(src)  # (1, S, D)
        model.decode(tgt, memory)  # (1, T, D)
    return rec.maps(len(src_ids), len(tgt_ids))  # one copy to the host
