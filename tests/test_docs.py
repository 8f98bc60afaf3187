"""The figures the Model tab and the docs give about the shipped checkpoint come from its own metrics.json, and
say which weights they are of."""
import json
import re
from pathlib import Path

from attention_lens.model.handlers import validation_rows
from transformer.model.checkpoint import DEFAULT_CHECKPOINT

ROOT = Path(__file__).resolve().parent.parent


def test_the_model_tab_says_which_weights_each_validation_bleu_is_of():
    metrics = {"val_bleu": 30.5, "weights": "average of epochs 008..009", "test": {"val/greedy": {"bleu": 30.25}}}
    [(_name, text)] = validation_rows(metrics)
    shipped, chosen = text.split("; ")
    assert "30.25" in shipped and "as shipped (fp16)" in shipped
    assert "30.5" in chosen and "fp32" in chosen and "average of epochs 008..009" in chosen
    [(_, only)] = validation_rows({"val_bleu": 30.5, "weights": "epoch 9"})  # before evaluate --save
    assert "30.5" in only and "fp32" in only and "shipped" not in only
    assert validation_rows({}) == []


def test_a_model_of_both_corpora_gets_a_validation_row_per_domain():
    """Its val_bleu is the mean of the domains, so it sits beside neither domain's shipped (fp16) figure."""
    metrics = {"val_bleu": 41.0, "weights": "average of epochs 005..006",
               "val_by_domain": {"bleu_multi30k": 40.0, "bleu_tatoeba": 42.0},
               "test": {"val/greedy": {"bleu": 39.9}, "tatoeba_val/greedy": {"bleu": 42.1}}}
    rows = dict(validation_rows(metrics))
    assert "39.9" in rows["Validation BLEU, Multi30k"] and "40.0 in fp32" in rows["Validation BLEU, Multi30k"]
    assert "42.1" in rows["Validation BLEU, Tatoeba"] and "42.0 in fp32" in rows["Validation BLEU, Tatoeba"]
    assert rows["Validation BLEU, mean of the domains"].startswith("41.0 in fp32")
    assert "average of epochs 005..006" in rows["Validation BLEU, mean of the domains"] and len(rows) == 3
    one = dict(validation_rows({**metrics, "weights": "average of epochs 006..006"}))  # a window of one epoch
    assert "(epoch 6)" in one["Validation BLEU, mean of the domains"] and "(epoch 6)" in one["Validation BLEU, Tatoeba"]


def test_the_training_time_in_the_docs_is_the_checkpoints():
    """The Model tab derives the training time from metrics.json's train_seconds; docs/training.md gives the
    same minutes next to the seconds it quotes from that file."""
    seconds = json.loads((DEFAULT_CHECKPOINT / "metrics.json").read_text(encoding="utf-8"))["train_seconds"]
    text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    quoted = re.findall(r"([\d,]+) s \(`train_seconds`.{0,200}?(\d+) min of training", text, re.DOTALL)
    assert quoted, "docs/training.md no longer quotes train_seconds and its minutes"
    assert {(int(s.replace(",", "")), int(m)) for s, m in quoted} == {(round(seconds), round(seconds / 60))}
