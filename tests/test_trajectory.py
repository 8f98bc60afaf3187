"""The library hands the view one trajectory (transformer/decode/trajectory.py): everything a view needs at every step,
and the Start handler goes down into the library once and comes back once."""
from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from attention_lens.translate import handlers as decoding_views
from attention_lens.translate import payload as P
from tests.decoders import decode_trajectory
from transformer.decode.trajectory import Trajectory, top_rows

SOURCE = "Ein Hund rennt."
ROOT = Path(__file__).resolve().parent.parent


def test_trajectory_holds_every_steps_view(tiny_translator):
    tr = tiny_translator
    traj = tr.trajectory(SOURCE)
    s = traj.session
    assert isinstance(traj, Trajectory) and traj.cursor == 0 and traj.n == len(s.positions) >= 3
    full = s.fork()
    full.cursor = traj.n - 1
    maps = full.attention
    for kind in ("encoder_self", "decoder_self", "cross"):
        np.testing.assert_array_equal(traj.maps[kind], maps[kind])
    assert traj.pieces == tr.tokenizer.pieces(traj.ids) and traj.ids[0] == tr.config.bos_id
    assert traj.texts == [tr.tokenizer.decode(traj.ids[:t + 1]) for t in range(traj.n)]
    name = traj.piece_names.__getitem__
    for t in range(traj.n):
        got, want = traj.topk(t, 5, name), s.topk(5, position=t)  # the session's own top-k
        assert [g[0] for g in got] == [w[0] for w in want]
        assert [g[1] for g in got] == pytest.approx([w[1] for w in want], rel=1e-5)
        assert traj.greedy[t] == s.positions[t].greedy
    assert traj.done == [i == tr.config.eos_id for i in traj.ids]
    assert traj.languages == ("de", "en") and traj.source == tr.tokenizer.pieces(s.source_ids)


def test_top_rows_orders_by_probability_then_id_and_keeps_ties():
    probs = np.array([[0.1, 0.3, 0.3, 0.2, 0.1], [0.2, 0.2, 0.2, 0.2, 0.2]], dtype=np.float32)
    ids, p = top_rows(probs, 3)
    assert ids.tolist() == [[1, 2, 3], [0, 1, 2]]
    np.testing.assert_allclose(p, [[0.3, 0.3, 0.2], [0.2, 0.2, 0.2]])


def test_forced_and_given_pieces_are_marked(tiny_translator):
    tr = tiny_translator
    s = tr.start(SOURCE)
    s.step()
    alt = next(p for p, _ in s.topk(5) if p != tr.tokenizer.piece(s.positions[-1].greedy))
    s.force(alt)
    s.run()
    traj = s.trajectory()
    assert traj.forced == [False, False, True] + [False] * (traj.n - 3)
    assert traj.differs[2] and traj.cursor == traj.n - 1


def test_roles_come_from_the_checkpoints_atlas_and_follow_a_rewritten_file(tiny_translator, tmp_path):
    """The roles are read again when head_atlas.json changes (the app's cache once served them stale)."""
    tr = tiny_translator
    tr.checkpoint_dir = tmp_path
    assert tr.trajectory(SOURCE).roles == {}
    atlas = {"heads": [{"kind": "cross", "layer": 1, "head": 2, "role": "alignment"}]}
    (tmp_path / "head_atlas.json").write_text(json.dumps(atlas))
    assert tr.trajectory(SOURCE).roles == {"cross": [[], [None, None, "alignment"]]}
    atlas["heads"][0]["role"] = "mixed"
    (tmp_path / "head_atlas.json").write_text(json.dumps(atlas) + " ")  # another size, whatever the clock says
    assert tr.trajectory(SOURCE).roles["cross"][1][2] == "mixed"


def test_the_payload_encodes_the_trajectory_as_it_is(tiny_translator):
    traj = tiny_translator.trajectory(SOURCE)
    p = json.loads(json.dumps(P.trajectory_payload(traj, k=3)))
    back = decode_trajectory(p)
    assert back["texts"] == traj.texts and back["pieces"] == traj.pieces
    want = traj.topk(1, 3, traj.piece_names.__getitem__)
    assert [x[0] for x in back["topk"][1][:3]] == [x[0] for x in want]
    assert [x[1] for x in back["topk"][1][:3]] == pytest.approx([x[1] for x in want], abs=2e-5)
    np.testing.assert_allclose(back["maps"]["cross"], traj.maps.cross, atol=1e-4)
    assert p["languages"] == ["de", "en"] and p["roles"] == traj.roles


def test_start_goes_down_into_the_library_once(tiny_translator):
    """Following the Start handler: every call from attention_lens/ code into transformer/ code is listed; there is one
    (Translator.trajectory) and nothing of the model is computed in attention_lens/ after it comes back."""
    tr = tiny_translator
    ui_dir, lib_dir = str(ROOT / "attention_lens") + os.sep, str(ROOT / "transformer") + os.sep
    calls = []

    def prof(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(lib_dir):
            caller = frame.f_back
            if caller is not None and caller.f_code.co_filename.startswith(ui_dir):
                calls.append(f"{Path(frame.f_code.co_filename).stem}.{frame.f_code.co_name}")

    sys.setprofile(prof)
    try:
        decoding_views.start(tr, SOURCE)
    finally:
        sys.setprofile(None)
    # reading the Trajectory's own fields (trajectory.topk, .n) computes nothing; the one trip down is this
    assert [c for c in calls if not c.startswith("trajectory.")] == ["decoding.trajectory"], calls


def test_the_payload_module_reads_nothing_of_the_model():
    """attention_lens/translate/payload.py encodes: it names no tokenizer, translator, model or torch (it computed
    pieces and top-k rows itself before the trajectory)."""
    tree = ast.parse((ROOT / "attention_lens" / "translate" / "payload.py").read_text())
    names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} | {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert not names & {"tokenizer", "translator", "model", "torch", "history_probs", "topk", "partition"}, \
        names & {"tokenizer", "translator", "model", "torch", "history_probs", "topk", "partition"}
