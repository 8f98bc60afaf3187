"""The source lengths a checkpoint stores (issue 40 item 3): what its training data held, for the input caveat."""
from __future__ import annotations

import json

import pytest

from transformer.model.metrics import read_metrics, read_source_lengths
from transformer.train import lengths, train


def test_summary_is_numpys_percentiles_of_the_lengths():
    xs = list(range(1, 101))  # 1..100: median 50.5, p95 95.05, p99 99.01 (linear interpolation)
    assert lengths.summary(xs) == {"median": 50, "p95": 95, "p99": 99, "max": 100}
    assert lengths.summary([7]) == {"median": 7, "p95": 7, "p99": 7, "max": 7}
    with pytest.raises(ValueError):
        lengths.summary([])


def test_source_lengths_counts_words_and_pieces():
    rec = lengths.source_lengths(["a b c", "a", "a b"], [5, 1, 3])
    assert rec["sentences"] == 3 and rec["words"]["max"] == 3 and rec["words"]["median"] == 2
    assert rec["pieces"] == {"median": 3, "p95": 5, "p99": 5, "max": 5}
    with pytest.raises(ValueError):
        lengths.source_lengths(["a"], [1, 2])


def test_training_stores_its_sources_lengths_and_the_tool_rebuilds_them(tmp_path, tiny_dir):
    """train writes the record of the pairs it trained on (joined ones included) into metrics.json; the tool
    rebuilds the same record from the run's log alone (for checkpoints trained before the record existed)."""
    from transformer.train.synthetic import tiny_tatoeba
    tat = tiny_tatoeba(tmp_path)
    out = tmp_path / "run"
    train.main(["--dry-run", "--out", str(out), "--no-progress", "--epochs", "1", "--concat", "0.5"])
    stored = read_metrics(out)[lengths.KEY]
    assert stored == json.loads((out / "training_log.json").read_text())[lengths.KEY]
    assert stored["sentences"] > 0 and stored["words"]["max"] >= stored["words"]["p99"] >= stored["words"]["median"]
    # the same record from the run's flags and corpora, recomputed independently of the run's own pass
    log = json.loads((out / "training_log.json").read_text())
    log["args"].update(data_dir=str(tiny_dir), tatoeba=str(tat))
    log["starts"][-1]["args"].update(data_dir=str(tiny_dir), tatoeba=str(tat))
    (out / "training_log.json").write_text(json.dumps(log))
    rec = lengths.main(["--checkpoint", str(out), "--save"])
    srcs = lengths.training_sources(log)
    joined = [s for s in srcs if s.count(".") >= 2]
    assert joined, "the rebuilt sources hold the run's joined pairs"
    assert rec["sentences"] == len(srcs) and rec["words"]["max"] == max(len(s.split()) for s in srcs)
    assert read_metrics(out)[lengths.KEY] == rec
    assert read_source_lengths(out) == rec


def test_read_source_lengths_is_none_without_a_record(tmp_path):
    assert read_source_lengths(tmp_path) is None and read_source_lengths(None) is None
    (tmp_path / "metrics.json").write_text(json.dumps({lengths.KEY: {"words": {"p99": "x"}}}))
    assert read_source_lengths(tmp_path) is None


def test_ship_carries_the_runs_record_even_when_it_continues_a_checkpoint(tmp_path):
    """ship --continues writes the checkpoint's log with the run's epochs after it: the lengths stay the run's."""
    from transformer.train import ship
    base, run = tmp_path / "base", tmp_path / "run"
    train.main(["--dry-run", "--out", str(base), "--no-progress", "--epochs", "1"])
    train.main(["--dry-run", "--out", str(run), "--no-progress", "--epochs", "1", "--init", str(base),
                "--concat", "1.0"])
    mine = json.loads((run / "training_log.json").read_text())[lengths.KEY]
    assert mine != json.loads((base / "training_log.json").read_text())[lengths.KEY]  # joined pairs: longer
    ship.main(["--run", str(run), "--out", str(tmp_path / "shipped"), "--continues", str(base)])
    assert read_metrics(tmp_path / "shipped")[lengths.KEY] == mine
