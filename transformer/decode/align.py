"""Word alignment read off the model, and its alignment error rate (AER) against human gold alignments.

    python -m transformer.align --pairs pairs.txt --gold gold.talp [--method all] [--max-words 40] [--json]

Pairs file: one `source ||| target` per line, pre-tokenised (words are space-separated tokens); the model
reads the left side. Gold file, "talp" format: one line per pair, space-separated links `i-j` (sure) or `ipj`
(possible), 1-indexed, source word first. No gold data ships with this repository.

Each pair is teacher-forced on its gold target (the words joined by spaces, as Translator.attend takes a
target). Pieces are mapped to the given words by SentencePiece's word-start marker '▁' in the encoding of
the joined sentence; when that does not give back the words exactly (normalisation changed a character, a
word holds a '▁' or another separator...), each word is tokenised on its own and the pieces concatenated,
so word boundaries are always the given ones. Word scores follow the view's merge (analysis.merge_words):
a source word gets the SUM of its pieces' columns, a target word the MEAN of its rows; each target word is
linked to the real source word with the most mass (the </s> column takes no link).

Rows (`CONVENTIONS`): "predicts", the rows that predict the word's pieces (a target word at target
positions a..b, BOS at 0, is predicted by rows a-1..b-1, as in Ferrando et al. 2022's "AWO"); "input", the
rows whose input is the word (rows a..b, their "AWI"). Scores: "attention", each decoder layer's
cross-attention, mean of heads (layer 0, 1, ...: 0-based, like AttentionMaps.figure), and the mean of all
layers and heads (layer "all"); "alti" and "saliency" (transformer/interpret/attribution.py; their source columns),
whole-model rows: layer "all".

AER = 1 − (|A∩S| + |A∩P|) / (|A| + |S|) (Och & Ney 2003), sure links counting as possible (P ⊇ S), with the
counts summed over the corpus (not a mean of sentence AERs). It is given in PERCENT everywhere: the table
(one decimal) and the JSON lines' "aer" (`aer()` returns percent too).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from ..interpret.analysis import merge_words
from ..model.tokenizer import WORD_START

CONVENTIONS = ("predicts", "input")
METHODS = ("attention", "alti", "saliency")  # the CLI's "all"
_LINK = re.compile(r"(\d+)([-p])(\d+)")


# -- gold alignments and AER ------------------------------------------------------------------------------

def parse_talp(line: str) -> tuple[set, set]:
    """One talp line -> (sure, possible) sets of 1-indexed (source word, target word); possible ⊇ sure."""
    sure, possible = set(), set()
    for item in line.split():
        m = _LINK.fullmatch(item)
        if m is None or int(m[1]) < 1 or int(m[3]) < 1:
            raise ValueError(f"not a talp link (i-j sure, ipj possible, 1-indexed): {item!r}")
        link = (int(m[1]), int(m[3]))
        if m[2] == "-":
            sure.add(link)
        possible.add(link)
    return sure, possible


def aer(alignments, gold) -> float:
    """Alignment error rate in PERCENT, 1 − (|A∩S| + |A∩P|) / (|A| + |S|), counts summed over the corpus.

    alignments: a sequence of link sets (one per sentence), gold: a sequence of (sure, possible) pairs; or one
    set and one (sure, possible) for a single sentence. Sure links count as possible. 0 when A and S are
    both empty (nothing to get wrong)."""
    if isinstance(alignments, (set, frozenset)):
        alignments, gold = [alignments], [gold]
    alignments, gold = list(alignments), list(gold)
    if len(alignments) != len(gold):
        raise ValueError(f"{len(alignments)} alignments for {len(gold)} gold sentences")
    a = s = a_s = a_p = 0
    for A, (S, P) in zip(alignments, gold):
        A, S = set(A), set(S)
        P = set(P) | S
        a, s = a + len(A), s + len(S)
        a_s, a_p = a_s + len(A & S), a_p + len(A & P)
    return 0.0 if a + s == 0 else 100.0 * (1.0 - (a_s + a_p) / (a + s))


# -- words and pieces -----------------------------------------------------------------------------------

def _marker_spans(pieces: list[str], words: list[str]) -> list[tuple[int, int]] | None:
    """Half-open piece spans of the words, split at '▁'; None unless they give back exactly these words."""
    spans: list[tuple[int, int]] = []
    for k, p in enumerate(pieces):
        if p.startswith(WORD_START) or not spans:
            spans.append((k, k + 1))
        else:
            spans[-1] = (spans[-1][0], k + 1)
    if len(spans) != len(words):
        return None
    for (a, b), w in zip(spans, words):
        if "".join(pieces[a:b]).replace(WORD_START, "") != w:
            return None
    return spans


def word_pieces(tokenizer, words: Sequence[str]) -> tuple[list[int], list[tuple[int, int]], bool]:
    """Words -> (piece ids, one half-open span of ids per word, whether the joined sentence's own tokenisation
    was kept). When its pieces do not map back to the words, each word is tokenised alone (a word with no
    piece at all gets <unk>)."""
    words = list(words)
    if not words or not all(isinstance(w, str) and w and not w.isspace() for w in words):
        raise ValueError("words must be a non-empty list of non-blank strings")
    ids = tokenizer.encode(" ".join(words))
    spans = _marker_spans(tokenizer.pieces(ids), words)
    if spans is not None:
        return ids, spans, True
    ids, spans = [], []
    for w in words:
        own = tokenizer.encode(w) or [tokenizer.unk_id]
        spans.append((len(ids), len(ids) + len(own)))
        ids += own
    return ids, spans, False


class TooLong(ValueError):
    """A pair with more pieces than the model reads (pair_ids): the one ValueError `evaluate` skips."""


def pair_ids(translator, source_words, target_words):
    """-> (source ids with EOS, target ids [BOS .. EOS], source word spans over the source ids, target word
    spans over target positions, BOS at 0). TooLong (a ValueError) when a side is too long for the model;
    ValueError for blank words (word_pieces)."""
    c = translator.config
    src, src_spans, _ = word_pieces(translator.tokenizer, source_words)
    tgt, tgt_spans, _ = word_pieces(translator.tokenizer, target_words)
    if len(src) + 1 > c.max_len or len(tgt) + 2 > c.max_len:
        raise TooLong(f"the pair has {len(src)} source and {len(tgt)} target pieces; the model reads at most "
                         f"{c.max_len} positions")
    return src + [c.eos_id], [c.bos_id] + tgt + [c.eos_id], src_spans, [(a + 1, b + 1) for a, b in tgt_spans]


# -- alignments -----------------------------------------------------------------------------------------

def score_rows(translator, src_ids: list[int], tgt_ids: list[int], methods: Iterable[str] = METHODS) -> dict:
    """{(method, layer): (T, S) rows over source pieces}: attention per decoder layer (0-based) and "all",
    alti and saliency "all" (their source part)."""
    from ..interpret.attribution import attribute_ids
    from .decoding import attend_ids
    out = {}
    for method in methods:
        if method == "attention":
            cross = attend_ids(translator.model, src_ids, tgt_ids).cross  # (L, H, T, S)
            out.update({(method, layer): cross[layer].mean(0) for layer in range(cross.shape[0])})
            out[(method, "all")] = cross.mean((0, 1))  # (T, S)
        elif method in ("alti", "saliency"):
            out[(method, "all")] = attribute_ids(translator.model, src_ids, tgt_ids, method)[0]  # (T, S)
        else:
            raise ValueError(f"unknown method {method!r}; one of {METHODS}")
    return out


def links(rows: np.ndarray, src_spans: list, tgt_spans: list, convention: str = "predicts") -> set:
    """(T, S) piece rows -> {(source word, target word)}, 1-indexed: each target word to the source word with
    the most mass (word columns summed over their pieces, word rows averaged; </s> excluded)."""
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}; one of {CONVENTIONS}")
    T, S = rows.shape
    if src_spans[-1][1] != S - 1 or tgt_spans[-1][1] != T - 1:
        raise ValueError("the spans must cover the source before </s> and the target between <s> and </s>")
    shift = 1 if convention == "predicts" else 0
    words = [(a - shift, b - shift) for a, b in tgt_spans]  # the rows of each target word
    rest = [(0, 1), (T - 1, T)] if shift == 0 else [(T - 2, T - 1), (T - 1, T)]  # <s> / </s> rows: no word
    query = sorted(words + rest)
    merged = merge_words(rows, query, list(src_spans) + [(S - 1, S)])  # (Qw, Sw + 1), </s> last
    pick = [query.index(w) for w in words]
    best = np.argmax(merged[pick, :-1], axis=-1)  # real source words only; ties: the first
    return {(int(i) + 1, k + 1) for k, i in enumerate(best)}


def alignment(translator, source_words, target_words, method: str = "attention", layer="all",
              convention: str = "predicts") -> set:
    """The model's word alignment of one pre-tokenised pair: {(i, j)} 1-indexed, source word i, target word j.
    layer: a 0-based decoder layer or "all" (None too); alti and saliency have only "all"."""
    layer = "all" if layer is None else layer
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; one of {METHODS}")
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}; one of {CONVENTIONS}")
    src, tgt, src_spans, tgt_spans = pair_ids(translator, source_words, target_words)
    rows = score_rows(translator, src, tgt, [method])
    if (method, layer) not in rows:
        raise ValueError(f"{method} has layers {[k[1] for k in rows]}, got {layer!r}")
    return links(rows[(method, layer)], src_spans, tgt_spans, convention)


# -- the command line -----------------------------------------------------------------------------------

def read_pairs(path, gold_path) -> list[tuple[list[str], list[str], tuple[set, set]]]:
    pairs = Path(path).read_text(encoding="utf-8").splitlines()
    gold = Path(gold_path).read_text(encoding="utf-8").splitlines()
    if len(pairs) != len(gold):
        raise ValueError(f"{path} has {len(pairs)} lines and {gold_path} {len(gold)}: one gold line per pair")
    out = []
    for n, (line, g) in enumerate(zip(pairs, gold), 1):
        parts = line.split(" ||| ") if " ||| " in line else line.split("|||")
        if len(parts) != 2 or not parts[0].split() or not parts[1].split():
            raise ValueError(f"{path}:{n}: expected 'source ||| target'")
        src, tgt = parts[0].split(), parts[1].split()
        try:
            sure, possible = parse_talp(g)
        except ValueError as e:
            raise ValueError(f"{gold_path}:{n}: {e}") from None
        if any(i > len(src) or j > len(tgt) for i, j in possible):
            raise ValueError(f"{gold_path}:{n}: a link beyond the pair's {len(src)} source / {len(tgt)} target words")
        out.append((src, tgt, (sure, possible)))
    return out


def evaluate(translator, pairs, methods=METHODS, notes: list | None = None) -> list[dict]:
    """AER of every (method, layer, convention) over the pairs: one dict each, in order. Pairs too long for
    the model are skipped (described in `notes`)."""
    found: dict = {}
    golds, skipped = [], 0
    for src_words, tgt_words, gold in pairs:
        try:
            src, tgt, src_spans, tgt_spans = pair_ids(translator, src_words, tgt_words)
        except TooLong:  # only that: any other ValueError is no length problem and propagates
            skipped += 1
            continue
        golds.append(gold)
        for key, rows in score_rows(translator, src, tgt, methods).items():
            for convention in CONVENTIONS:
                found.setdefault(key + (convention,), []).append(links(rows, src_spans, tgt_spans, convention))
    if skipped and notes is not None:
        notes.append(f"{skipped} pairs too long for the model were skipped")
    return [{"method": m, "layer": layer, "convention": c, "pairs": len(golds), "aer": round(aer(a, golds), 4)}
            for (m, layer, c), a in found.items()]


def table(results: list[dict]) -> str:
    lines = [f"{'method':<10} {'layer':>5}  {'convention':<10} {'pairs':>6} {'AER %':>7}"]
    for r in results:
        lines.append(f"{r['method']:<10} {r['layer']!s:>5}  {r['convention']:<10} {r['pairs']:>6} {r['aer']:>7.1f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m transformer.align", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", required=True, help="one 'source ||| target' per line, pre-tokenised")
    p.add_argument("--gold", required=True, help="talp links per line: i-j sure, ipj possible, 1-indexed")
    p.add_argument("--checkpoint", default=None, help="checkpoint directory (default: the shipped model)")
    p.add_argument("--device", default="auto")
    p.add_argument("--method", choices=METHODS + ("all",), default="all")
    p.add_argument("--max-words", type=int, default=None, help="only pairs with at most N words on each side")
    p.add_argument("--limit", type=int, default=None, help="at most N pairs (after --max-words)")
    p.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    a = p.parse_args(argv)
    try:
        pairs = read_pairs(a.pairs, a.gold)
    except (OSError, ValueError) as e:
        p.error(str(e))
    if a.max_words is not None:
        pairs = [x for x in pairs if len(x[0]) <= a.max_words and len(x[1]) <= a.max_words]
    pairs = pairs[:a.limit] if a.limit is not None else pairs
    if not pairs:
        p.error("no pairs to align (check --max-words / --limit)")
    from .decoding import Translator
    tr = Translator.load(a.checkpoint, a.device)
    notes: list[str] = []
    results = evaluate(tr, pairs, METHODS if a.method == "all" else (a.method,), notes)
    for note in notes:
        print(note, file=sys.stderr)
    if a.json:
        for r in results:
            print(json.dumps(r))
    else:
        print(f"AER in percent (lower is better) over {results[0]['pairs'] if results else 0} pairs; "
              f"layer: 0-based decoder layer, all = every layer (and head)")
        print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
