"""BLEU and metrics.json: the one place that computes a score or writes the metrics file."""
from __future__ import annotations


def bleu(hyps: list[str], refs: list[str]) -> dict:
    """Corpus sacreBLEU of detokenised hypotheses against raw references: cased and lowercased."""
    import sacrebleu
    return {"bleu": round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2),
            "bleu_lc": round(sacrebleu.corpus_bleu(hyps, [refs], lowercase=True).score, 2)}
