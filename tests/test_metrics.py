import json
import os
import shutil

import pytest
import sacrebleu

from transformer.model import checkpoint, metrics
from transformer.model.metrics import METRICS, bleu, chrf, read_metrics, update_metrics
from transformer.train import data as D


def test_bleu_is_sacrebleu_cased_and_lowercased():
    hyps = ["A dog runs in the snow .", "a Woman rides a bike ."]
    refs = ["A dog runs through the snow .", "A woman rides a bicycle ."]
    got = bleu(hyps, refs)
    assert set(got) == {"bleu", "bleu_lc"}
    assert got["bleu"] == round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2)
    assert got["bleu_lc"] == round(sacrebleu.corpus_bleu(hyps, [refs], lowercase=True).score, 2)
    assert got["bleu_lc"] > got["bleu"]
    assert chrf(hyps, refs) == round(sacrebleu.corpus_chrf(hyps, [refs]).score, 2)


def test_one_definition_of_the_file_name():
    assert checkpoint.METRICS is metrics.METRICS == "metrics.json"


def test_read_metrics_missing_or_unreadable(tmp_path):
    assert read_metrics(tmp_path / "nowhere") == {}
    (tmp_path / METRICS).write_text("{not json")
    assert read_metrics(tmp_path) == {}
    (tmp_path / METRICS).write_text("[1, 2]")
    assert read_metrics(tmp_path) == {}


def test_update_metrics_merges_drops_and_replaces_atomically(tmp_path):
    ck = tmp_path / "ck"
    m = update_metrics(ck, {"val_bleu": 1.0, "test": {"a/greedy": {"bleu": 2}}})
    assert m == read_metrics(ck) == {"val_bleu": 1.0, "test": {"a/greedy": {"bleu": 2}}}
    assert oct((ck / METRICS).stat().st_mode & 0o777) == oct(0o644)
    # a dict value merges into the stored dict; others replace
    m = update_metrics(ck, {"val_bleu": 3.0, "test": {"b/beam4": {"bleu": 4}}})
    assert m == {"val_bleu": 3.0, "test": {"a/greedy": {"bleu": 2}, "b/beam4": {"bleu": 4}}}
    # drop happens before the changes are applied
    m = update_metrics(ck, {"weights": "average"}, drop=("test", "absent"))
    assert m == {"val_bleu": 3.0, "weights": "average"} == json.loads((ck / METRICS).read_text())
    assert m == update_metrics(ck, {})
    assert sorted(os.listdir(ck)) == [METRICS]  # no temp file left behind
    (ck / METRICS).write_text("garbage")
    assert update_metrics(ck, {"x": 1}) == {"x": 1}


def test_update_metrics_leaves_the_old_file_when_writing_fails(tmp_path):
    update_metrics(tmp_path, {"a": 1})
    with pytest.raises(TypeError):
        update_metrics(tmp_path, {"b": object()})
    assert read_metrics(tmp_path) == {"a": 1} and sorted(os.listdir(tmp_path)) == [METRICS]


def test_evaluate_and_average_record_through_update_metrics(tiny_trained, tiny_dir, tmp_path):
    from transformer.model.checkpoint import load_checkpoint, save_weights
    from transformer.train import average, evaluate
    ck = tmp_path / "ck"
    shutil.copytree(tiny_trained, ck)
    update_metrics(ck, {"val_bleu": 0.0, "epochs": 2})
    r = evaluate.main(["--checkpoint", str(ck), "--data-dir", str(tiny_dir), "--split", "val", "--save",
                       "--device", "cpu"])
    evaluate.main(["--checkpoint", str(ck), "--data-dir", str(tiny_dir), "--split", "test_2016_flickr",
                   "--save", "--device", "cpu"])
    m = read_metrics(ck)
    assert set(m["test"]) == {"val/greedy", "test_2016_flickr/greedy"} and m["epochs"] == 2
    assert m["test"]["val/greedy"]["bleu"] == r["bleu"] > 50 and "chrf" in r
    model, _ = load_checkpoint(ck)
    (ck / "epochs").mkdir()
    for e in (1, 2):
        save_weights(ck / "epochs" / f"epoch_{e:03d}.pt", model, half=False)
    average.main(["--checkpoint", str(ck), "--data-dir", str(tiny_dir), "--tatoeba", "none", "--search"])
    m = read_metrics(ck)
    assert "test" not in m and m["epochs"] == 2 and m["weights"] == "epoch 2"  # a tie keeps the shortest window
    assert m["val_bleu"] == r["bleu"] == m["val_by_domain"]["bleu_multi30k"]  # two identical epochs: that model


def one_epoch_checkpoint(source, tmp_path):
    """A copy of the checkpoint `source` whose epochs/ holds its own weights as epoch 1: (folder, model, tokenizer)."""
    from transformer.model.checkpoint import load_checkpoint, save_weights
    ck = tmp_path / "ck"
    shutil.copytree(source, ck)
    model, tok = load_checkpoint(ck)
    (ck / "epochs").mkdir()
    save_weights(ck / "epochs" / "epoch_001.pt", model, half=False)
    return ck, model, tok


def test_average_scores_both_domains_as_training_does(tiny_trained, tiny_dir, tmp_path):
    """With a Tatoeba file, --search keeps the window with the best mean of the two domains' BLEU and records
    each domain's, the figures transformer.train.train logs for an epoch."""
    from transformer.train import average
    from transformer.train.corpus import tatoeba_split
    from transformer.train.evaluate import translate_bleu
    from transformer.train.synthetic import tiny_tatoeba
    ck, model, tok = one_epoch_checkpoint(tiny_trained, tmp_path)
    tatoeba = tiny_tatoeba(tmp_path)
    average.main(["--checkpoint", str(ck), "--data-dir", str(tiny_dir), "--tatoeba", str(tatoeba), "--search"])
    m = read_metrics(ck)
    expected = translate_bleu(model, tok, {"multi30k": D.load_pairs(tiny_dir, "val"),
                                           "tatoeba": tatoeba_split(tatoeba, tiny_dir).val}, "cpu")
    assert set(m["val_by_domain"]) == {"bleu_multi30k", "bleu_tatoeba"}
    assert m["val_bleu"] == expected["bleu"] == round((expected["bleu_multi30k"] + expected["bleu_tatoeba"]) / 2, 2)
    assert m["val_by_domain"]["bleu_tatoeba"] == expected["bleu_tatoeba"]


def test_average_scores_an_en_de_model_in_its_own_direction(tiny_en_de_dir, tiny_dir, tmp_path):
    """The validation sets are turned the way the saved epochs translate (their config: en -> de), as training
    scored them; de -> en sets would give an English -> German model a BLEU near 0."""
    from transformer.train import average
    from transformer.train.corpus import oriented, tatoeba_split
    from transformer.train.evaluate import translate_bleu
    from transformer.train.synthetic import tiny_tatoeba
    ck, model, tok = one_epoch_checkpoint(tiny_en_de_dir, tmp_path)
    tatoeba = tiny_tatoeba(tmp_path)
    average.main(["--checkpoint", str(ck), "--data-dir", str(tiny_dir), "--tatoeba", str(tatoeba), "--search"])
    expected = translate_bleu(model, tok, {"multi30k": D.load_pairs(tiny_dir, "val", "en", "de"),
                                           "tatoeba": oriented(tatoeba_split(tatoeba, tiny_dir), "en").val}, "cpu")
    m = read_metrics(ck)
    assert m["val_by_domain"]["bleu_multi30k"] == expected["bleu_multi30k"] > 50
    assert m["val_bleu"] == expected["bleu"]
