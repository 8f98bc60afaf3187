"""Honest caveats on input (the classroom issue, item 4): long, repeating, another language, unknown characters.
Each is said beside the output, never blocks; the same notes reach the CLI (stderr) and the API (`notes`)."""
from __future__ import annotations

import pytest

from transformer.decode import caveats as K
from transformer.decode.decoding import Translator
from transformer.model.metrics import read_source_lengths

LONG = ("The old man who lives in the house at the end of our street told me yesterday that he had seen a fox in "
        "his garden while he was drinking his morning coffee on the terrace with his wife and their dog.")
FRENCH = "Je voudrais un café, s'il vous plaît."


@pytest.fixture(scope="module")
def en_de():
    return Translator.load("en-de", "cpu")


def test_repetition_finds_the_same_one_to_four_pieces_three_times_in_a_row():
    loop = ["▁Der", "▁Stadt", "teil", "▁der", "▁Stadt", "teil", "▁der", "▁Stadt", "teil", "▁der", "▁Stadt", "teil"]
    assert K.repetition(["▁Das"] + loop + ["."]) == (["▁Stadt", "teil", "▁der"], 3)  # the first run that loops
    assert K.repetition(["▁a", "▁b", "▁a", "▁b", "▁a", "▁b"]) == (["▁a", "▁b"], 3)
    assert K.repetition(["▁sehr"] * 3) == (["▁sehr"], 3)
    assert K.repetition(["▁a", "▁b", "▁a", "▁b"]) is None  # twice is no loop
    assert K.repetition(["▁a", "▁b", "▁c", "▁d", "▁e"] * 2) is None  # a unit of 5 is past MAX_REPEAT_N
    assert K.repetition([]) is None


def test_unknown_characters_are_named_once_each_in_order(en_de):
    tok = en_de.tokenizer
    assert K.unknown_characters(tok, "I am tired 😀 ☃ 😀.") == ["😀", "☃"]
    assert K.unknown_characters(tok, "I am tired.") == []
    said = K.caveats("Hi 😀", 2, ["▁Hallo"], tok, "en", None)
    assert [c["kind"] for c in said] == ["unknown"]
    assert "😀 (grinning face)" in said[0]["message"] and "<unk>" in said[0]["message"]


def test_long_is_measured_against_the_stored_training_lengths(en_de):
    rec = {"words": {"p99": 10}, "pieces": {"p99": 14}}
    tok = en_de.tokenizer
    assert K.caveats(" ".join(["word"] * 10), 10, [], tok, "en", rec) == []
    long = K.caveats(" ".join(["word"] * 11), 11, [], tok, "en", rec)
    assert [c["kind"] for c in long] == ["long"] and "11 words" in long[0]["message"]
    assert "at most 10 words (14 pieces)" in long[0]["message"]
    assert K.caveats("few words", 15, [], tok, "en", rec)[0]["kind"] == "long"  # many pieces
    assert K.caveats(" ".join(["word"] * 50), 50, [], tok, "en", None) == []  # no record: nothing claimed


def test_shipped_checkpoints_store_their_training_lengths():
    for name in ("de-en", "en-de"):
        rec = read_source_lengths(Translator.load(name, "cpu").checkpoint_dir)
        assert rec and 10 <= rec["words"]["p99"] < 60 and rec["pieces"]["p99"] >= rec["words"]["p99"]


def test_a_normal_sentence_gets_no_caveat(en_de):
    traj = en_de.trajectory("I know that he is coming tomorrow.")
    assert traj.caveats == []


def test_a_long_sentence_and_french_get_theirs(en_de):
    long = en_de.trajectory(LONG)
    kinds = [c["kind"] for c in long.caveats]
    assert "long" in kinds and f"{len(LONG.split())} words" in long.caveats[0]["message"]
    french = en_de.trajectory(FRENCH)
    lang = [c for c in french.caveats if c["kind"] == "language"]
    assert lang and lang[0]["message"].startswith("This looks like French; the models read German and English only")


def test_the_api_and_the_page_payload_carry_them(en_de):
    from attention_lens.translate import handlers as decoding_views
    _, _, payload, topk = decoding_views.start(en_de, LONG)
    messages = [c["message"] for c in payload["caveats"]]
    assert messages and all(m in topk["notes"] for m in messages)
    _, _, payload, topk = decoding_views.start(en_de, "I am tired.")
    assert payload["caveats"] == [] and topk["notes"] == []


def test_the_cli_says_them_on_stderr(capsys):
    from transformer.decode import translate
    assert translate.main(["--checkpoint", "en-de", "--device", "cpu", LONG, "I am tired 😀"],
                          env={"LANG": "C.UTF-8"}) == 0
    out, err = capsys.readouterr()
    assert len(out.strip().splitlines()) == 2  # both translated: a caveat never blocks
    assert "note: This sentence is long" in err and "😀 (grinning face)" in err
