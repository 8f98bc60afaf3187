"""The Model tab's table: a real header row, and thread counts in words ("1 thread", "2 threads")."""
import os

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import torch

from attention_lens.model import handlers as model_handlers
from transformer.model.device import describe


def test_describe_says_thread_in_the_singular_for_one(monkeypatch):
    for n, words in ((1, "CPU (1 thread)"), (2, "CPU (2 threads)"), (16, "CPU (16 threads)")):
        monkeypatch.setattr(torch, "get_num_threads", lambda n=n: n)
        assert describe(torch.device("cpu")) == words


def cells(line: str) -> list[str]:
    assert line.startswith("|") and line.endswith("|"), line
    return [c.strip() for c in line[1:-1].split("|")]


def test_model_card_is_a_table_with_a_header(tiny_translator, monkeypatch):
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    metrics = {"train_seconds": 600, "epochs": 3, "device": "CPU (1 threads)", "val_bleu": 1.5}  # an older run's
    lines = model_handlers.model_card(tiny_translator, metrics).splitlines()
    header, rule, rows = cells(lines[0]), cells(lines[1]), [cells(x) for x in lines[2:]]
    assert len(header) == 2 and all(header), f"the header row names its columns: {lines[0]!r}"
    assert rule == ["---", "---"] and rows and all(len(r) == 2 and all(r) for r in rows)
    card = dict(rows)
    assert card["Device"] == "CPU (1 thread)" and card["Training"].endswith("on CPU (1 thread)")
    assert card["Parameters"] == f"{tiny_translator.model.num_parameters():,}"
    assert "1 threads" not in "\n".join(lines)


def test_model_card_names_the_training_data_and_tatoebas_attribution(tiny_translator):
    from transformer.train.corpus import ATTRIBUTION
    old = dict(cells(x) for x in model_handlers.model_card(tiny_translator, {}).splitlines()[2:])
    assert old["Training data"] == "Multi30k task 1 training captions" and "Attribution" not in old
    metrics = {"data": "220,312 training pairs an epoch: Tatoeba's training part (transformer.train.corpus) + Multi30k "
                       "train x2",
               "test": {"tatoeba_test/greedy": {"bleu": 38.1, "bleu_lc": 39.0, "chrf": 55.5},
                        "test_2016_flickr/greedy": {"bleu": 40.1, "bleu_lc": 40.4, "chrf": 60.0}}}
    card = dict(cells(x) for x in model_handlers.model_card(tiny_translator, metrics).splitlines()[2:])
    assert card["Attribution"] == ATTRIBUTION and "tatoeba.org" in ATTRIBUTION and "CC-BY 2.0" in ATTRIBUTION
    assert card["Tatoeba test, held out (greedy)"].startswith("BLEU 38.1 cased, 39.0 lowercased")
    assert card["Multi30k test_2016_flickr (greedy)"].startswith("BLEU 40.1 cased")


def test_the_german_card_says_where_it_runs_and_trained_in_german(tiny_translator, monkeypatch):
    """The device rows are the library's English ('CPU (2 threads; fine-tuned on 1)'); the German card says them
    in German (attention_lens/<tab>/handlers.py device_words), a GPU's name as it is."""
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    metrics = {"train_seconds": 600, "epochs": 3, "device": "CPU (2 threads; fine-tuned on 1)", "val_bleu": 1.5}
    for mode in ("plain", "detail"):
        de = model_handlers.model_card(tiny_translator, metrics, mode, "de")
        assert "CPU (2 Threads)" in de and "CPU (2 Threads; nachtrainiert auf 1)" in de, de
        assert "threads" not in de and "fine-tuned" not in de
        en = model_handlers.model_card(tiny_translator, metrics, mode, "en")
        assert "CPU (2 threads; fine-tuned on 1)" in en
    from attention_lens.model.handlers import device_words
    assert device_words("CPU (1 threads)", "de") == "CPU (1 Thread)" and device_words("CUDA: NVIDIA H200", "de") == \
        "CUDA: NVIDIA H200"


@pytest.mark.parametrize("name", ["de-en", "en-de"])
def test_the_german_card_holds_no_english_word_in_either_version(name):
    """Every row of the shipped models' German card, plainly and in detail, and the Head atlas's detailed summary
    (its sentences named): no English word (tests/short_texts.py's measure; quoted examples, split and file names as
    'Multi30k val' and 'test_2016_flickr', and the attribution's web address, are names)."""
    import re

    from attention_lens.atlas import tab as atlas_tab
    from attention_lens.model import eval_sets
    from tests.short_texts import english_words
    from transformer.decode.decoding import Translator
    from transformer.model.checkpoint import DEFAULT_CHECKPOINT
    from transformer.model.metrics import read_metrics
    tr = Translator.load(DEFAULT_CHECKPOINT.parent / name, "cpu")
    # quoted: examples
    names = r"\((?:Multi30k|Tatoeba) \w+\)|test_2016_flickr|www\.\S+|tatoeba\.org|d_model|pre-LN|'[^']*'"
    for mode in ("plain", "detail"):
        card = model_handlers.model_card(tr, read_metrics(tr.checkpoint_dir), mode, "de")
        assert [(line, english_words(re.sub(names, " ", line))) for line in card.splitlines()[2:]
                if english_words(re.sub(names, " ", line))] == []
    atlas = atlas_tab.load_atlas(tr)
    summary = atlas_tab.atlas_texts(atlas, eval_sets.atlas_words(atlas, tr), tr, "de")["summary"]["detail"]
    assert "Validierungssätzen" in summary and english_words(re.sub(names, " ", summary)) == [], summary
