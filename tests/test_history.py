from pathlib import Path

import numpy as np
import pytest

from transformer.interpret.history import HISTORY, AttentionHistory, save_history
from transformer.train import data as D

SHIPPED = Path(__file__).resolve().parent.parent / "checkpoints" / "de-en" / HISTORY


def _history(tok, sentences, epochs, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for e in epochs:
        snap = []
        for text in sentences:
            S = len(tok.encode(text)) + 1
            tgt = [tok.bos_id] + tok.encode("A dog runs.") + [tok.eos_id]
            w = rng.random((2, 3, len(tgt), S))
            snap.append((tgt, (w / w.sum(-1, keepdims=True)).astype(np.float16)))
        out.append({"epoch": e, "snap": snap})
    return out


def test_round_trip(tmp_path, tiny_tok):
    sentences = ["Ein Hund rennt.", "Eine Katze schläft."]
    hist = _history(tiny_tok, sentences, [1, 2, 5])
    save_history(tmp_path / HISTORY, sentences, tiny_tok, hist)
    h = AttentionHistory.load(tmp_path / HISTORY)
    assert h.sentences == sentences and h.epochs == [1, 2, 5]
    assert h.source(1) == tiny_tok.pieces(tiny_tok.encode(sentences[1])) + ["</s>"]
    assert h.target(0, 5)[0] == "<s>" and h.target(0, 5) == tiny_tok.pieces(hist[2]["snap"][0][0])
    c = h.cross(1, 2)
    assert c.dtype == np.float32 and c.shape == hist[1]["snap"][1][1].shape
    np.testing.assert_array_equal(c, hist[1]["snap"][1][1].astype(np.float32))
    # snapshots() gives back what save_history took, so --resume rewrites the same file
    again = [{"epoch": e, "snap": h.snapshots(tiny_tok, e)} for e in h.epochs]
    for old, new in zip(hist, again):
        for (t0, c0), (t1, c1) in zip(old["snap"], new["snap"]):
            assert t0 == t1 and c1.dtype == c0.dtype
            np.testing.assert_array_equal(c0, c1)
    save_history(tmp_path / "again.npz", h.sentences, tiny_tok, again)
    with np.load(tmp_path / HISTORY) as z0, np.load(tmp_path / "again.npz") as z1:
        assert sorted(z0.files) == sorted(z1.files)
        for k in z0.files:
            assert z0[k].dtype == z1[k].dtype
            np.testing.assert_array_equal(z0[k], z1[k])


def test_clear_errors(tmp_path, tiny_tok):
    with pytest.raises(FileNotFoundError):
        AttentionHistory.load(tmp_path / "missing.npz")
    save_history(tmp_path / HISTORY, ["Ein Hund rennt."], tiny_tok, _history(tiny_tok, ["Ein Hund rennt."], [1, 2]))
    h = AttentionHistory.load(tmp_path / HISTORY)
    for i in (1, -1, True, "0", 0.0):
        with pytest.raises(ValueError, match="sentence index must be 0..0"):
            h.cross(i, 1)
    for e in (3, 0, None, True):
        with pytest.raises(ValueError, match=r"epoch .* was not recorded \(recorded: \[1, 2\]\)"):
            h.target(0, e)
    with pytest.raises(ValueError, match="was not recorded"):
        h.snapshots(tiny_tok, 9)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a readable attention history"):
        AttentionHistory.load(tmp_path / "junk.npz")
    np.savez(tmp_path / "other.npz", x=np.zeros(2))
    with pytest.raises(ValueError, match="not an attention history"):
        AttentionHistory.load(tmp_path / "other.npz")
    np.savez(tmp_path / "cut.npz", sentences=np.array(["a"]), epochs=np.array([1]), src_0=np.array(["a"]))
    with pytest.raises(ValueError, match="incomplete"):
        AttentionHistory.load(tmp_path / "cut.npz")


@pytest.mark.skipif(not SHIPPED.exists(), reason="no shipped checkpoint")
def test_shipped_history_loads():
    h = AttentionHistory.load(SHIPPED)
    assert len(h.sentences) == 4
    whole = [e for e in h.epochs if e >= 1]  # plus, since the Tatoeba recipe, 0 and points inside epoch 1
    assert whole == list(range(1, h.epochs[-1] + 1)) and all(0 <= e < 1 for e in h.epochs[:-len(whole)])
    assert set(h.sentences) <= set(D.read_examples())  # the app's own examples
    src, tgt = h.source(0), h.target(0, h.epochs[-1])
    c = h.cross(0, h.epochs[-1])
    assert src[-1] == "</s>" and tgt[0] == "<s>" and c.dtype == np.float32
    assert c.shape[2:] == (len(tgt), len(src))
    np.testing.assert_allclose(c.sum(-1), 1, atol=5e-3)


def test_read_examples(tmp_path):
    assert D.EXAMPLES.name == "examples_de.txt" and D.EXAMPLES.parent.name == "assets"
    assert len(D.read_examples()) >= 4
    (tmp_path / "ex.txt").write_text("  Ein Hund.  \n\n   \nZwei Katzen.\n", encoding="utf-8")
    assert D.read_examples(tmp_path / "ex.txt") == ["Ein Hund.", "Zwei Katzen."]
    assert D.read_examples(tmp_path / "missing.txt") == []
