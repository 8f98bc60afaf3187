"""Head roles: each rule of transformer.interpret.roles.ROLE_RULES on hand-made attention maps that clearly are and
clearly are not that role, the rule table's selection, the legend and hover words generated from the tables, why the
pruning curve ends, and the tools' split choices."""
import gzip
import html

import numpy as np
import pytest

from transformer.interpret import roles as R
from transformer.interpret.capture import AttentionMaps
from transformer.model.checkpoint import DEFAULT_CHECKPOINT
from transformer.train import atlas as A
from transformer.train import corpus as C
from transformer.train import data as D
from transformer.train import evaluate

S = 8  # source pieces: six words, '.', '</s>'
SRC = ["▁Der", "▁Hund", "▁sieht", "▁das", "▁Zebra", "▁heute", ".", "</s>"]
TGT = ["<s>", "▁The", "▁dog", "▁sees", "▁the", "▁zebra", "▁today", "."]  # T = 8 decoder inputs
# SentencePiece-like scores (log-probabilities): '▁Zebra' is the rarest piece, '▁Der' the most frequent
SCORES = {"▁Der": -3.0, "▁Hund": -7.0, "▁sieht": -8.0, "▁das": -3.5, "▁Zebra": -12.0, "▁heute": -6.0,
          ".": -2.0, "</s>": 0.0, "<s>": 0.0, "▁The": -3.0, "▁dog": -7.0, "▁sees": -8.0, "▁the": -3.0,
          "▁zebra": -12.0, "▁today": -6.0}
I = np.arange(S)


def onehot(cols, n=S):
    a = np.zeros((len(cols), n))
    a[np.arange(len(cols)), cols] = 1.0
    return a


def causal_uniform():
    c = np.tril(np.ones((S, S)))
    return c / c.sum(1, keepdims=True)


def roles_of(enc=(), dec=(), cross=(), scores=SCORES):
    """Roles of hand-made heads (one layer; each list a head's (queries, keys) map). Kinds left empty get
    a uniform head so that every kind has one."""
    enc = list(enc) or [np.full((S, S), 1 / S)]
    dec = list(dec) or [causal_uniform()]
    cross = list(cross) or [np.full((S, S), 1 / S)]
    maps = AttentionMaps(np.stack(enc)[None], np.stack(dec)[None], np.stack(cross)[None], SRC, TGT)
    stats = A.head_statistics([maps], scores=scores)
    return ({k: A.assign_role(k[0], v) for k, v in stats.items()}, stats)


def role(kind, h, **heads):
    return roles_of(**heads)[0][(kind, 0, h)]


# ----------------------------------------------------------------------------------------------------
# One rule at a time: a head that clearly has the role, and one that clearly has not

def test_previous_token():
    prev = onehot(np.maximum(I - 1, 0))
    assert role("encoder_self", 0, enc=[prev]) == "previous-token"
    assert role("decoder_self", 0, dec=[prev]) == "previous-token"
    two_back = onehot(np.maximum(I - 2, 0))
    assert role("encoder_self", 0, enc=[two_back]) != "previous-token"
    assert role("decoder_self", 0, dec=[two_back]) != "previous-token"


def test_next_token_only_in_the_encoder():
    nxt = onehot(np.minimum(I + 1, S - 1))
    assert role("encoder_self", 0, enc=[nxt]) == "next-token"
    assert role("encoder_self", 0, enc=[onehot(np.minimum(I + 2, S - 1))]) != "next-token"
    _, stats = roles_of()
    assert stats[("decoder_self", 0, 0)]["argmax_next"] is None  # causal: the decoder has no next key
    assert A.assign_role("decoder_self", {"argmax_next": 1.0, "confidence": 1.0}) == A.MIXED


def test_same_token():
    assert role("encoder_self", 0, enc=[np.eye(S)]) == "same-token"
    assert role("decoder_self", 0, dec=[np.eye(S)]) == "same-token"
    assert role("encoder_self", 0, enc=[onehot(S - 1 - I)]) != "same-token"  # a mirror: itself only in the middle


def test_sink_on_the_sentence_boundary():
    assert role("encoder_self", 0, enc=[onehot([S - 1] * S)]) == "sink"  # every query on </s>
    assert role("cross", 0, cross=[onehot([S - 1] * S)]) == "sink"
    assert role("decoder_self", 0, dec=[onehot([0] * S)]) == "sink"  # on <s>, the decoder's boundary key
    assert role("encoder_self", 0, enc=[onehot([2] * S)]) != "sink"  # every query on one word


def test_punctuation():
    dot = SRC.index(".")
    assert role("encoder_self", 0, enc=[onehot([dot] * S)]) == "punctuation"
    assert role("cross", 0, cross=[onehot([dot] * S)]) == "punctuation"
    assert role("cross", 0, cross=[onehot([1] * S)]) != "punctuation"


def test_rare_token_uses_the_piece_scores():
    zebra, der = SRC.index("▁Zebra"), SRC.index("▁Der")
    # every query on '▁Zebra'; '▁Zebra' itself (whose own key is no candidate) on the next rarest, '▁sieht'
    rare = onehot([zebra] * zebra + [SRC.index("▁sieht")] + [zebra] * (S - zebra - 1))
    frequent = onehot([der] * S)
    assert role("encoder_self", 0, enc=[rare]) == "rare-token"
    assert role("cross", 0, cross=[onehot([zebra] * S)]) == "rare-token"
    assert role("encoder_self", 0, enc=[frequent]) != "rare-token"
    # the rarest piece is what the scores say: with '▁Der' made the rarest, the heads swap
    flipped = {**SCORES, "▁Der": -20.0}
    assert role("encoder_self", 0, enc=[frequent], scores=flipped) == "rare-token"
    assert role("encoder_self", 0, enc=[rare], scores=flipped) != "rare-token"
    assert roles_of(enc=[rare], scores=None)[1][("encoder_self", 0, 0)]["argmax_rarest"] is None


def test_alignment_is_agreement_with_the_other_cross_heads():
    diag = onehot(np.minimum(I, S - 2))  # output piece i on source piece i (the last on '.')
    near = onehot(np.minimum(I + (I % 3 == 0), S - 2))  # mostly the same alignment
    reverse = onehot(S - 2 - np.minimum(I, S - 2))
    roles, stats = roles_of(cross=[diag, diag, near, reverse])
    assert [roles[("cross", 0, h)] for h in range(3)] == ["alignment"] * 3
    assert roles[("cross", 0, 3)] != "alignment"
    assert stats[("cross", 0, 0)]["agreement"] > 0.9 and stats[("cross", 0, 3)]["agreement"] < 0.3
    one, _ = roles_of(cross=[diag])  # a lone cross head has nothing to agree with
    assert one[("cross", 0, 0)] != "alignment"


def test_diffuse_and_mixed():
    assert role("encoder_self", 0) == "diffuse"  # uniform
    assert role("decoder_self", 0) == "diffuse"  # uniform over what it can see
    assert role("cross", 0) == "diffuse"
    # every query two pieces back: sharp, but no rule of the table describes it
    two_back = onehot(np.maximum(I - 2, 0))
    roles, stats = roles_of(enc=[two_back], scores=None)
    assert roles[("encoder_self", 0, 0)] == A.MIXED
    assert A.role_reason("encoder_self", stats[("encoder_self", 0, 0)]).startswith("no rule holds; nearest is")


def test_a_uniform_head_scores_its_chance_level():
    """Tied strongest keys share the query, so a uniform head's argmax statistics equal `chance`."""
    maps = AttentionMaps(np.full((1, 1, S, S), 1 / S), causal_uniform()[None, None], np.full((1, 2, S, S), 1 / S),
                         SRC, TGT)
    stats, chance = A.pooled_statistics([maps], scores=SCORES)
    for kind in ("encoder_self", "decoder_self"):
        for name in ("argmax_previous", "argmax_same", "argmax_boundary", "argmax_rarest", "confidence"):
            assert stats[(kind, 0, 0)][name] == pytest.approx(chance[kind][name], abs=1e-4), (kind, name)
    assert chance["encoder_self"]["argmax_previous"] == round(1 / S, 4)
    for name in ("argmax_boundary", "argmax_rarest", "agreement"):
        assert stats[("cross", 0, 1)][name] == pytest.approx(chance["cross"][name], abs=1e-4), name
    assert chance["cross"]["agreement"] == round(1 / S, 4) and chance["cross"]["monotonicity"] is None


# ----------------------------------------------------------------------------------------------------
# The table

@pytest.mark.parametrize("rule", A.ROLE_RULES, ids=lambda r: r.name)
def test_every_rule_holds_at_its_threshold_and_only_for_its_kinds(rule):
    t = rule.threshold
    passing, failing = (t, t * 0.999) if rule.op == ">=" else (t * 0.999, t)
    for kind in ("encoder_self", "decoder_self", "cross"):
        expect = rule.name if kind in rule.kinds else A.MIXED
        assert A.assign_role(kind, {rule.statistic: passing}) == expect
        assert A.assign_role(kind, {rule.statistic: failing}) == A.MIXED
        assert A.assign_role(kind, {rule.statistic: None}) == A.MIXED


def test_the_rule_passed_by_most_wins_and_ties_go_to_the_first():
    prev, same = A.ROLE_RULES[0], A.ROLE_RULES[2]
    assert (prev.name, same.name) == ("previous-token", "same-token")
    both = {"argmax_previous": prev.threshold * 1.2, "argmax_same": same.threshold * 1.5}
    assert A.assign_role("decoder_self", both) == "same-token"
    both["argmax_previous"] = prev.threshold * 1.6
    assert A.assign_role("decoder_self", both) == "previous-token"
    tie = {"argmax_previous": prev.threshold * 1.5, "argmax_same": same.threshold * 1.5}
    assert A.assign_role("decoder_self", tie) == "previous-token"


def test_rules_are_checked_when_made():
    with pytest.raises(ValueError):
        A.Rule("x", "x", ("encoder_self",), "no_such_statistic", ">=", 0.5, "")
    with pytest.raises(ValueError):
        A.Rule("x", "x", ("encoder_self",), "confidence", ">", 0.5, "")
    with pytest.raises(ValueError):
        A.Rule("x", "x", ("encoders",), "confidence", ">=", 0.5, "")


MY_RULES = (A.Rule("looks-back", "back", ("encoder_self",), "argmax_previous", ">=", 0.9, "looks one piece back"),)


def test_the_legend_and_the_roles_come_from_the_one_table(monkeypatch):
    from attention_lens.atlas import tab as atlas_tab
    atlas = {"heads": [{"kind": "encoder_self", "layer": 0, "head": 0, "role": "previous-token",
                        "argmax_previous": 0.95}], "bleu": 30.0}
    before = atlas_tab.atlas_view(atlas)
    assert [r["role"] for r in before["legend"]] == list(A.ROLES)
    assert [r["rule"] for r in before["legend"][:-1]] == [r.text for r in A.ROLE_RULES]
    monkeypatch.setattr(R, "ROLE_RULES", MY_RULES)  # the one table (transformer.train.atlas re-exports it)
    after = atlas_tab.atlas_view(atlas)
    assert after["legend"][0] == {"role": "looks-back", "label": "back", "kinds": ["encoder_self"],
                                  "rule": "strongest key is the previous piece: ≥ 90% of queries",
                                  "description": "looks one piece back", "plain": "looks one piece back",
                                  "rules": {"en": "strongest key is the previous piece: ≥ 90% of queries",
                                            "de": "Schlüssel mit dem größten Gewicht ist das Wortstück davor: "
                                                  "≥ 90 % der Zeilen"}}  # no
    # plain text in the catalogue for a role it has not met: its own description
    assert [r["role"] for r in after["legend"]] == ["looks-back", A.MIXED] and after["labels"]["looks-back"] == "back"
    assert A.assign_role("encoder_self", {"argmax_previous": 0.95}) == "looks-back"  # the same table
    assert A.role_rules_json()[0]["threshold"] == 0.9


def test_the_checkpoints_atlas_is_read_again_when_its_file_changes(tmp_path):
    """transformer.interpret.roles.load_atlas (the Head atlas tab's and the attention view's roles): a rebuilt atlas is
    the one read next, not a copy cached for the life of the process; a missing or malformed file is no atlas."""
    import json
    import os

    from attention_lens.atlas import tab as atlas_tab
    path = tmp_path / R.ATLAS
    assert R.load_atlas(tmp_path) is None and R.load_atlas(None) is None
    head = {"kind": "cross", "layer": 1, "head": 0, "role": "alignment"}
    path.write_text(json.dumps({"heads": [head]}), encoding="utf-8")
    first = R.load_atlas(tmp_path)
    assert first["heads"] == [head] and R.load_atlas(tmp_path) is first  # unchanged: the copy read before
    assert R.head_roles(first) == {"cross": [[], ["alignment"]]}
    st = path.stat()
    path.write_text(json.dumps({"heads": [{**head, "role": "diffuse"}]}), encoding="utf-8")  # the same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a later time, even on a coarse clock
    assert R.head_roles(R.load_atlas(tmp_path)) == {"cross": [[], ["diffuse"]]}
    path.write_text(json.dumps({"heads": [head, {**head, "head": 1, "role": "sink"}]}), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the first time again, but another size
    assert R.head_roles(R.load_atlas(tmp_path)) == {"cross": [[], ["alignment", "sink"]]}
    path.write_text("{not json", encoding="utf-8")
    assert R.load_atlas(tmp_path) is None
    path.write_text(json.dumps({"heads": "none"}), encoding="utf-8")
    assert R.load_atlas(tmp_path) is None
    assert atlas_tab.load_atlas_file is R.load_atlas and atlas_tab.roles is R.head_roles  # the app reads these


def test_an_atlas_from_another_rule_table_says_so_and_gives_no_reason():
    from attention_lens.atlas import tab as atlas_tab
    head = {"kind": "encoder_self", "layer": 0, "head": 0, "role": "previous-token", "argmax_previous": 0.95,
            "bleu_ablated": 29.0, "bleu_drop": 1.0, "rank": 1}
    now = atlas_tab.atlas_view({"heads": [head], "role_rules": A.role_rules_json(), "bleu": 30.0})
    assert now["rules_note"] is None
    assert "why: strongest key is the previous piece: 95% of queries" in now["heads"][0]["hover"].replace("<br>  ", " ")
    old = atlas_tab.atlas_view({"heads": [head], "bleu": 30.0,
                                "role_rules": [{"role": "previous-token", "rule": "share_previous >= 0.5"}]})
    assert "earlier rule table" in old["rules_note"] and "why" not in old["heads"][0]["hover"]


def test_hover_uses_words_not_field_names():
    from attention_lens.atlas import tab as atlas_tab
    _, stats = roles_of(enc=[onehot(np.maximum(I - 1, 0))])
    for key, st in stats.items():
        h = {"kind": key[0], "layer": 0, "head": 0, "role": A.assign_role(key[0], st), "bleu_ablated": 28.5,
             "bleu_drop": -0.25, "rank": 3, **st}
        text = atlas_tab.hover_text(h, None, 3).replace("<br>  ", " ")  # continuation lines joined
        for raw in [n for n in A.STATS if "_" in n] + ["bleu_ablated", "bleu_drop", "_"]:  # field names
            assert raw not in text, (key, raw)
        assert "BLEU with this head switched off: 28.50 (gains 0.25; importance rank 3 of 3)" in text
        assert "largest weight of a row, on average" in text
    h = {"kind": "encoder_self", "layer": 0, "head": 0, "role": "previous-token", **stats[("encoder_self", 0, 0)]}
    lines = atlas_tab.hover_text(h, {"encoder_self": {"confidence": 0.125}}, 3)
    text = lines.replace("<br>  ", " ")
    assert "role <b>previous-token</b><br>why: strongest key is the previous piece: 100% of queries" in text
    assert "previous 100%" in text and "(any one key at random: 12%)" in text
    assert all(len(html.unescape(line)) <= atlas_tab.HOVER_WIDTH for line in lines.replace("<b>", "").replace(
        "</b>", "").split("<br>"))  # short enough for the tooltip beside a cell
    assert "&lt;/s&gt;" in text and "</s>" not in text  # pieces are escaped for the HTML hover


def test_the_hover_in_german_holds_no_english_word():
    """Every head of the shipped atlases hovered on the German page: the same lines (where it is, role, why, BLEU,
    statistics) in German (the catalogue's [said] atlas_hv_* and stat_*), no English word (tests/short_texts.py's
    measure), the numbers the English hover gives with the German decimal comma, each line short enough for the
    tooltip."""
    import re

    from attention_lens.atlas import tab as atlas_tab
    from tests.short_texts import english_words
    for name in ("de-en", "en-de"):
        atlas = R.load_atlas(DEFAULT_CHECKPOINT.parent / name)
        view = atlas_tab.atlas_view(atlas)
        for h in view["heads"]:
            de, en = h["hovers"]["de"], h["hover"]
            plain = html.unescape(re.sub(r"</?b>", "", de)).replace("<br>  ", " ").replace("<br>", " ")
            pieces = r"<s>|</s>"
            assert english_words(re.sub(pieces, " ", plain)) == [], (name, plain)
            assert "warum:" in plain and "Rolle" in plain and "BLEU mit diesem Kopf abgeschaltet" in plain
            number = r"\d+(?:[.,]\d+)?"  # German with its decimal comma (issue 58), English with the point
            assert re.findall(number, re.sub(r"<[^>]+>|&lt;/?s&gt;", " ", de)) == \
                [n.replace(".", ",") for n in re.findall(number, re.sub(r"<[^>]+>|&lt;/?s&gt;", " ", en))], \
                (name, h["kind"], h["layer"], h["head"])
            assert not re.search(r"\d\.\d", re.sub(r"<[^>]+>|&lt;/?s&gt;", " ", de)), de
            assert all(len(html.unescape(line)) <= atlas_tab.HOVER_WIDTH + 4 for line in
                       re.sub(r"</?b>", "", de).split("<br>"))


# ----------------------------------------------------------------------------------------------------
# Why the pruning curve ends

def _atlas(curve_bleu, removed, kinds=("encoder_self", "cross"), per_kind=2, bleu=40.0):
    heads = [{"kind": k, "layer": 0, "head": h} for k in kinds for h in range(per_kind)]
    curve = [{"removed": None, "heads_off": 0, "bleu": bleu}]
    curve += [{"removed": list(r), "heads_off": i + 1, "bleu": b} for i, (r, b) in enumerate(zip(removed, curve_bleu))]
    return {"heads": heads, "bleu": bleu, "pruning": curve}


def test_pruning_stop_names_the_reason():
    below = _atlas([39.0, 19.0], [("encoder_self", 0, 0), ("cross", 0, 1)])
    st = A.pruning_stop(below)
    assert st["reason"] == "below_fraction" and st["heads_off"] == 2 and st["limit"] == 20.0
    text = A.pruning_stop_text(below)
    assert text.startswith("The curve ends at 2 heads off: switching off cross-attention layer 1 head 2 too took "
                           "BLEU to 19.00, below 50% of the intact model's 40.00 (20.00)")
    emptied = _atlas([39.0, 35.0], [("encoder_self", 0, 0), ("encoder_self", 0, 1)])
    assert A.pruning_stop(emptied)["reason"] == "kind_off" and A.pruning_stop(emptied)["kinds"] == ["encoder_self"]
    assert "left no encoder self-attention head on" in A.pruning_stop_text(emptied)
    assert A.pruning_stop(_atlas([39.0], [("cross", 0, 0)]))["reason"] == "incomplete"
    assert A.pruning_stop({"heads": [], "bleu": 1.0}) is None and A.pruning_stop_text({"heads": []}) is None
    # a recorded fraction wins over today's constant
    assert A.pruning_stop({**below, "prune_stop_fraction": 0.4})["reason"] == "incomplete"


def test_the_pages_stop_and_rule_words_are_the_librarys_in_english_and_its_own_in_german():
    """The Head atlas tab says why the curve ends and each role's rule from the catalogue (attention_lens/texts, [said]
    atlas_stop_*, stat_*): in English the library's sentences word for word, in German with no English left."""
    from attention_lens.atlas import tab as atlas_tab
    cases = [_atlas([39.0, 19.0], [("encoder_self", 0, 0), ("cross", 0, 1)]),
             _atlas([39.0, 35.0], [("encoder_self", 0, 0), ("encoder_self", 0, 1)]),
             _atlas([39.0], [("cross", 0, 0)]), {"heads": [], "bleu": 1.0}]
    assert {(A.pruning_stop(a) or {}).get("reason") for a in cases} == {"below_fraction", "kind_off", "incomplete",
                                                                         None}
    for a in cases:
        assert atlas_tab.stop_words(a) == A.pruning_stop_text(a)
        de = atlas_tab.stop_words(a, "de")
        assert (de is None) == (a["heads"] == []) and (de is None or ("Kurve" in de and "heads" not in de))
    assert "Kreuz-Aufmerksamkeit, Schicht 1, Kopf 2" in atlas_tab.stop_words(cases[0], "de")
    for row in A.legend():
        assert atlas_tab.rule_words(row["role"]) == row["rule"]
        de = atlas_tab.rule_words(row["role"], "de")
        assert de != row["rule"] and "queries" not in de and "strongest" not in de, de


def test_the_shipped_atlas_still_reads():
    """The app reads head_atlas.json files written before the rule table (and any written since)."""
    from attention_lens.atlas import tab as atlas_tab
    from transformer.model.checkpoint import DEFAULT_CHECKPOINT
    atlas = atlas_tab.load_atlas_file(DEFAULT_CHECKPOINT)
    if atlas is None:
        pytest.skip("the shipped checkpoint has no head atlas")
    view = atlas_tab.atlas_view(atlas)
    assert len(view["heads"]) == len(atlas["heads"]) and all(h["hover"] for h in view["heads"])
    stop = A.pruning_stop(atlas)
    assert stop is None or stop["reason"] in ("below_fraction", "kind_off", "all_off", "incomplete")
    assert (stop is None) == (view["pruning_note"] is None)


# ----------------------------------------------------------------------------------------------------
# Every split of transformer.train.corpus in the tools

def test_evaluate_and_atlas_take_every_split(tmp_path, tiny_dir, tiny_trained, capsys):
    path = tmp_path / "t.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(f"Ich sehe {i} Katzen.\tI see {i} cats.\n" for i in range(300)))
    _tr, pairs = evaluate.load_model_and_split(tiny_trained, "cpu", tiny_dir, "tatoeba_test", tatoeba=path)
    assert pairs == C.load_split("tatoeba_test", tiny_dir, path) and len(pairs) == 30
    r = evaluate.main(["--checkpoint", str(tiny_trained), "--data-dir", str(tiny_dir), "--tatoeba", str(path),
                       "--split", "tatoeba_test", "--device", "cpu"])
    assert r["sentences"] == 30 and "tatoeba_test (30 sentences" in capsys.readouterr().out
    mixed = C.load_split("mixed_val", tiny_dir, path)
    assert A.spread(mixed, 4) == [mixed[0], mixed[len(mixed) // 4], mixed[len(mixed) // 2], mixed[3 * len(mixed) // 4]]
    assert {p in D.load_pairs(tiny_dir, "val") for p in A.spread(mixed, 4)} == {True, False}  # both domains
    assert A.spread(mixed, None) == mixed == A.spread(mixed, 10 ** 6)
    with pytest.raises(SystemExit):
        evaluate.main(["--split", "no_such_split"])


def test_a_malformed_atlas_is_no_atlas_and_says_so(tmp_path):
    """Issue 43 B6: a head_atlas.json that cannot be read as an atlas is still no atlas (None), but a warning names
    the file and what is wrong with it, once per version of the file (load_atlas is called on every request)."""
    import json
    import os
    import warnings
    path = tmp_path / R.ATLAS
    path.write_text("{not json", encoding="utf-8")
    with pytest.warns(UserWarning) as said:
        assert R.load_atlas(tmp_path) is None
    (w,) = said
    assert str(path) in str(w.message) and "Expecting property name" in str(w.message)  # json's own words
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert R.load_atlas(tmp_path) is None  # the same file again: said once
    st = path.stat()
    path.write_text(json.dumps({"heads": "none"}), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    with pytest.warns(UserWarning, match="no list of heads") as said:
        assert R.load_atlas(tmp_path) is None
    assert str(path) in str(said[0].message)
    path.write_bytes(b"\xff\xfe{}")  # not UTF-8
    with pytest.warns(UserWarning, match="utf-8"):
        assert R.load_atlas(tmp_path) is None
