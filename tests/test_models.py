"""Several models served at once (issue 30): the registry, the checkpoints found, the user's choice travelling with
their sentence, the hint about another language, the API's optional `model`."""
from __future__ import annotations

import threading

import gradio as gr
import pytest

from attention_lens.ablation import handlers as ablation_handlers
from attention_lens.beam import handlers as beam_handlers
from attention_lens.layers import handlers as layers_handlers
from attention_lens.shell import exports
from attention_lens.shell.models import Models, direction_label, of_session
from attention_lens.shell.texts import shown
from attention_lens.translate import attribution as attribution_views
from attention_lens.translate import handlers as decoding_views
from attention_lens.translate.attribution import alignment_headers
from attention_lens.translate.tab import hint_for, language_words
from tests.answered import in_order
from transformer.decode.decoding import Translator
from transformer.model.checkpoint import SHIPPED, CheckpointError, find_checkpoints, resolve_checkpoint

DE, EN = "Ein Hund rennt.", "A dog runs."


@pytest.fixture()
def models(tiny_translator, tiny_en_de):
    return Models([tiny_translator, tiny_en_de])


def test_the_checkpoint_records_its_languages(tiny_translator, tiny_en_de):
    assert tiny_translator.config.direction == "de-en" and tiny_en_de.config.direction == "en-de"
    assert direction_label(tiny_en_de) == "English → German"
    assert tiny_en_de.translate(EN) == DE and tiny_translator.translate(DE) == EN


def test_models_by_key_and_the_default(models, tiny_en_de):
    assert models.default == "de-en" and models.choices() == [("German → English", "de-en"),
                                                               ("English → German", "en-de")]
    assert models.get("") is models.first and models.get("en-de") is tiny_en_de
    assert models.of_language("en") == "en-de" and models.of_language("fr") is None
    with pytest.raises(gr.Error, match="unknown model"):
        models.get("fr-de")
    with pytest.raises(ValueError, match="two checkpoints"):
        Models([tiny_en_de, Translator.load(tiny_en_de.checkpoint_dir, "cpu")])


@pytest.mark.parametrize("bad", [["de-en"], {"de-en": 1}, ["x"], 3, 1.5, b"de-en"])
def test_a_model_name_that_is_no_text_is_an_unknown_model(models, bad):
    """Issue 43 B3: a list or a dict as the model name (unhashable) is answered like an unknown name, with the
    choices, not a TypeError that the client sees as a generic error."""
    with pytest.raises(gr.Error, match=r"unknown model .*; one of de-en, en-de"):
        models.get(bad)


def test_the_api_answers_a_model_name_that_is_no_text_with_the_choices(models):
    from gradio_client import Client

    from tests.serving import serving
    with serving([models.first, models.get("en-de")]) as url:
        client = Client(url, verbose=False)
        # the page's events read the picker (a gr.Dropdown: Gradio names its choices), the API's own the text
        for api, args in (("/start", (DE, 8, False)), ("/reference", (DE, EN)), ("/translate", (DE,))):
            said = r"unknown model|“[Mm]odel” must be (one of its choices|a text); this request sent \['x'\]"
            with pytest.raises(Exception, match=said):
                client.predict(*args, ["x"], api_name=api)


def test_find_checkpoints(tmp_path, tiny_trained, tiny_en_de_dir):
    assert find_checkpoints([tiny_trained]) == [tiny_trained]
    folder = tmp_path / "models"
    folder.mkdir()
    for name, src in (("b", tiny_en_de_dir), ("a", tiny_trained)):
        (folder / name).symlink_to(src, target_is_directory=True)
    assert [p.name for p in find_checkpoints([folder])] == ["a", "b"]
    assert [p.name for p in find_checkpoints([folder, tiny_trained])][:2] == ["a", "b"]
    with pytest.raises(CheckpointError, match="neither a checkpoint"):
        find_checkpoints([tmp_path])  # it holds a folder of checkpoints, not checkpoints
    assert resolve_checkpoint("de-en") == SHIPPED / "de-en"  # a shipped model by its name
    assert find_checkpoints(None)[0] == SHIPPED / "de-en"  # the default serves every shipped model, de-en first


def test_a_session_carries_its_model(models):
    """Every event after Start reads the model from the sentence: what the user picked, not a global."""
    en_state = decoding_views.start(models.get("en-de"), EN)[0]
    de_state = decoding_views.start(models.get("de-en"), DE)[0]
    step = of_session(decoding_views.run)
    assert step(en_state)[1] == DE and step(de_state)[1] == EN
    with pytest.raises(gr.Error, match="Press Start"):
        step(None)


def test_two_users_with_different_models_at_once_see_only_their_own(models):
    results, errors = {}, []

    def user(key, text, want):
        try:
            for i in range(10):
                state, _translation, payload, _ = decoding_views.start(models.get(key), text)
                assert payload["languages"] == key.split("-")
                ran = of_session(decoding_views.run)(state)
                assert ran[1] == want, (key, ran[1])
                results[key] = results.get(key, 0) + 1
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=user, args=a) for a in (("de-en", DE, EN), ("en-de", EN, DE))] * 1
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == {"de-en": 10, "en-de": 10}


def test_each_models_words(tiny_translator, tiny_en_de):
    de, en = language_words(tiny_translator), language_words(tiny_en_de)
    assert shown(de["label"]) == "German sentence" and shown(en["label"]) == "English sentence"  # gr.I18n's
    assert shown(en["placeholder"]).startswith("Type an English sentence, e.g. ")
    assert shown(en["reference"]) == "German reference"
    assert shown(en["reference"], "de") == "Deutsche Übersetzung zum Vergleich"
    values = [v for _, v in en["examples"][1:]]
    assert "I will call you tomorrow." in values and all("·" in label for label, _ in en["examples"][1:])


def test_the_other_language_is_noticed_and_a_switch_offered(models):
    message, other = hint_for(models, "de-en", "The weather is nice today.")
    assert "looks like English" in message and other == "en-de"
    assert hint_for(models, "de-en", DE) == ("", None)  # its own language, in pieces it knows
    assert "looks like" not in hint_for(models, "en-de", EN)[0]  # (the tiny vocabulary spells "dog" out)
    message, other = hint_for(models, "de-en", "xkcd qwrtz zzgh")
    assert other is None and "not words the model knows" in message
    one = Models([models.first])  # nobody reads English here: said, nothing to switch to
    message, other = hint_for(one, "de-en", "The weather is nice today.")
    assert "looks like English" in message and other is None


def test_the_api_takes_an_optional_model(models):
    from gradio_client import Client

    from tests.serving import serving
    with serving([models.first, models.get("en-de")]) as url:
        client = Client(url, verbose=False)
        assert client.predict(DE, api_name="/translate") == EN
        assert client.predict(EN, "en-de", api_name="/translate") == DE
        translation, payload, _ = client.predict(EN, 8, False, "en-de", api_name="/start")
        assert translation == "" and payload["languages"] == ["en", "de"]  # at step 0, of the model asked for
        assert client.predict(DE, 8, False, api_name="/start")[1]["languages"] == ["de", "en"]  # the default
        with pytest.raises(Exception, match="unknown model"):
            client.predict(DE, "xx-yy", api_name="/translate")


def test_the_command_line_notices_the_other_language(capsys):
    """python -m transformer.translate says on stderr when a line looks like another language, and translates it
    all the same (the hint advises, it never refuses)."""
    from transformer.decode import translate
    assert translate.main(["--checkpoint", "de-en", "The weather is nice today.", "Ich bin müde."]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 2 and err.count("note:") == 1 and "looks like English" in err


def test_ship_writes_the_last_completed_epoch_and_says_it_is_in_training(tmp_path, tiny_trained):
    """transformer.train.ship: a paused run's partial epoch is never what is shipped, and the card says how far it
    is."""
    import json
    import shutil

    from attention_lens.model.handlers import model_card
    from transformer.train import ship
    run = tmp_path / "run"
    shutil.copytree(tiny_trained, run)
    entry = {"step": 10, "train_loss": 1.0, "grad_norm": 1.0, "val_loss": 1.0, "val_bleu": 20.0, "val_bleu_lc": 21.0,
             "val_bleu_multi30k": 19.0, "val_bleu_tatoeba": 21.0, "lr": 1e-3, "epoch_seconds": 600.0,
             "tokens_per_s": 900, "elapsed_seconds": 600.0}
    log = {"args": {"epochs": 7}, "epochs": [{"epoch": 1, **entry},
                                             {"epoch": 2, "paused_at_group": 5, **entry, "val_bleu": 25.0}]}
    (run / "training_log.json").write_text(json.dumps(log))
    ship.main(["--run", str(run), "--out", str(tmp_path / "out"), "--data", "tiny"])
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["weights"] == "epoch 1" and m["val_bleu"] == 20.0 and m["in_training"] and m["epochs_planned"] == 7
    assert m["train_seconds"] == 1200  # the paused part's time counts as training time
    from transformer.decode.decoding import Translator
    card = model_card(Translator.load(tmp_path / "out", "cpu"), m)
    assert "still in training: these are the weights after epoch 1 of 7" in card


def test_the_tabs_of_a_models_own_content_are_one_set_filled_for_the_model_picked():
    """Head atlas, Attention being learned and Model hold one set of components for all models (a second model
    costs its weights, not a copy of these in the page and the process), and picking a model fills them with its
    atlas, history and card."""
    import json

    from attention_lens.app import build_demo
    from transformer.interpret.history import HISTORY, AttentionHistory
    de, en = Translator.load("de-en", "cpu"), Translator.load("en-de", "cpu")
    demo = build_demo([de, en])
    ids = [getattr(b, "elem_id", None) for b in demo.blocks.values()]
    for one in ("atlas", "model_card", "curves", "curves_note", "learned_intro", "learned_example", "learned_plot"):
        assert ids.count(one) == 1, one
    picker = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "model")
    pick = next(f for f in demo.fns.values() if (picker._id, "input") in [(t[0], t[1]) for t in f.targets])
    for tr, name in ((en, "English → German"), (de, "German → English")):
        out = dict(zip([o.elem_id for o in pick.outputs], in_order(pick, pick.fn(tr.config.direction)), strict=True))
        assert name in out["model_card"]
        atlas = json.loads((tr.checkpoint_dir / "head_atlas.json").read_text(encoding="utf-8"))
        assert [h["bleu_drop"] for h in out["atlas"]["heads"]] == [h["bleu_drop"] for h in atlas["heads"]]
        history = AttentionHistory.load(tr.checkpoint_dir / HISTORY)
        assert [t for t, _ in out["learned_example"]["choices"]] == list(history.sentences)
        assert out["curves"]["visible"] and out["curves"]["value"] is not None


def test_ship_continues_a_checkpoint_whose_run_could_not_resume(tmp_path, tiny_trained, tiny_tok):
    """transformer.train.ship --continues: a run fine-tuned from a shipped checkpoint (its own run's state lost) ships
    as that checkpoint's next epochs: the log and attention history go on from the checkpoint's, numbered on, and the
    schedule planned stays the checkpoint's."""
    import json
    import shutil

    import numpy as np

    from transformer.interpret.history import HISTORY, AttentionHistory, save_history
    from transformer.train import ship
    entry = {"train_loss": 1.0, "grad_norm": 1.0, "val_loss": 1.0, "val_bleu_lc": 21.0, "val_bleu_multi30k": 19.0,
             "val_bleu_tatoeba": 21.0, "lr": 1e-4, "epoch_seconds": 600.0, "tokens_per_s": 900}
    sentences = ["ein hund", "eine katze"]
    snap = lambda v: [([1, 5, 2], np.full((1, 1, 3, 3), v, dtype=np.float16)) for _ in sentences]
    base, run = tmp_path / "base", tmp_path / "run"
    shutil.copytree(tiny_trained, base)
    shutil.copytree(tiny_trained, run)
    (base / "training_log.json").write_text(json.dumps({
        "args": {"epochs": 3}, "starts": [{"step": 0, "epoch": 1, "args": {"epochs": 3}}],
        "epochs": [{"epoch": 1, "step": 100, "val_bleu": 20.0, "elapsed_seconds": 600.0, **entry},
                   {"epoch": 2, "step": 200, "val_bleu": 25.0, "elapsed_seconds": 1200.0, **entry}]}))
    save_history(base / HISTORY, sentences, tiny_tok, [{"epoch": e, "snap": snap(e / 10)} for e in (0, 1, 2)])
    (run / "training_log.json").write_text(json.dumps({
        "args": {"epochs": 1, "init": str(base)}, "starts": [{"step": 0, "epoch": 1, "args": {"epochs": 1}}],
        "epochs": [{"epoch": 1, "step": 90, "val_bleu": 27.0, "elapsed_seconds": 500.0, **entry}]}))
    save_history(run / HISTORY, sentences, tiny_tok, [{"epoch": e, "snap": snap(0.5 + e / 10)} for e in (0, 0.5, 1)])
    ship.main(["--run", str(run), "--out", str(tmp_path / "out"), "--data", "tiny", "--continues", str(base)])
    out = tmp_path / "out"
    m = json.loads((out / "metrics.json").read_text())
    assert (m["weights"], m["val_bleu"], m["epochs"], m["epochs_planned"], m["in_training"], m["steps"]) == \
        ("epoch 3", 27.0, 3, 3, False, 290)
    log = json.loads((out / "training_log.json").read_text())
    assert [e["epoch"] for e in log["epochs"]] == [1, 2, 3] and log["epochs"][-1]["elapsed_seconds"] == 1700.0
    history = AttentionHistory.load(out / HISTORY)
    assert history.epochs == [0, 1, 2, 3]
    assert np.allclose(history.cross(1, 3), 0.6, atol=1e-3) and np.allclose(history.cross(1, 2), 0.2, atol=1e-3)


# -- issue 43 A2: every handler that reads the translator follows the sentence's model, whoever picked last ------

def fingerprint(x):
    """What an answer shows, comparable with ==: floats rounded, a session as its model and pieces, a figure as its
    JSON, an exported file as its text (.json) or its name; left out: the server's time for a request ("ms") and the
    payload's counter ("seq", new in every answer)."""
    import numpy as np
    import plotly.graph_objects as go

    from transformer.decode.decoding import DecodingSession
    if isinstance(x, DecodingSession):
        return ("session", x.translator.config.direction, tuple(x.target_ids), x.cursor)
    if isinstance(x, go.Figure):
        return fingerprint(x.to_plotly_json())
    if isinstance(x, np.ndarray):
        return fingerprint(x.tolist())
    if isinstance(x, dict):
        return tuple(sorted((str(k), fingerprint(v)) for k, v in x.items() if k not in ("ms", "seq")))
    if isinstance(x, (list, tuple)):
        return tuple(fingerprint(v) for v in x)
    if isinstance(x, (float, np.floating)):
        return round(float(x), 5)
    if isinstance(x, str) and x.endswith(".json") and "export-" in x:
        from pathlib import Path
        return Path(x).read_text(encoding="utf-8")
    if isinstance(x, str) and "export-" in x:
        return x.rsplit("/", 1)[-1]
    return x if isinstance(x, (int, str, bool, type(None))) else repr(type(x))


def test_two_users_on_two_models_each_get_their_own_model_in_every_handler():
    """Two users, one on each shipped model, take turns; before each event the other user picks and starts on their own
    model. Every event of the page that reads the translator (attention_lens/shell/models.py of_session and the handlers
    that read
    session.translator themselves) answers with the user's own model: the same answer as the handler called with that
    model, never the one with the other. Catches the mutation "hand every handler the model picked most recently by
    anyone" (the two-users test above goes only through decoding_views.run, which never reads it)."""
    from types import SimpleNamespace

    from attention_lens.app import build_demo
    shipped = {key: Translator.load(key, "cpu") for key in ("de-en", "en-de")}
    demo = build_demo(list(shipped.values()))

    def fn(name, elem_id=None):  # the page's event function `name` (one whose inputs or outputs hold `elem_id`),
        # answering a list in the order of its outputs (tests/answered.py)
        found = [f for f in demo.fns.values() if getattr(f.fn, "__name__", None) == name
                 and (elem_id is None or elem_id in [getattr(b, "elem_id", None) for b in f.inputs + f.outputs])]
        assert len(found) >= 1, name
        return lambda *a: in_order(found[0], found[0].fn(*a))

    evt = lambda data: SimpleNamespace(_data=data)

    def as_table(f, rows, said):  # word_alignment_at's answer as the page's table shows it
        return f, {"headers": alignment_headers(), "data": rows}, said

    users = {"de-en": ("Ein Hund rennt im Park.", "A dog runs in the park."),
             "en-de": ("A dog runs in the park.", "Ein Hund rennt im Park.")}
    started = {}
    for key, (text, _) in users.items():
        started[key] = fn("start")(text, 8, False, key)[0]
        assert started[key].translator is shipped[key]
    for key, (text, ref) in users.items():
        own, other = shipped[key], shipped["en-de" if key == "de-en" else "de-en"]
        s = started[key]
        third = own.start(text).topk(3)[2][0]  # a first piece the model would not choose: decoded again there
        pos = {"step": 1, "ids": [own.config.bos_id, own.tokenizer.piece_id(third)], "forced": [0, 1]}
        events = [  # (the page's event, its arguments, which of its outputs, the handler of (tr, ...) it answers as)
            # (no "reset": with no piece forced it rewinds the session's own history, decoding nothing with any model)
            ("on_reference", (s, ref, 8, False), slice(0, 1),  # the payload (the top-k is drawn from it)
             lambda tr: decoding_views.reference_at(tr, s, ref, 8, False)[:1]),  # noqa: B023 (called in the loop)
            ("export", (s, pos), slice(None), lambda tr: exports.export_at(tr, s, pos)),  # noqa: B023 (called in the loop)
            ("on_ask", (s, evt({"method": "alti", "position": pos, "key": "k"})), slice(None),
             lambda tr: attribution_views.attribution_at(tr, s, pos, "alti", "k")),  # noqa: B023 (called in the loop)
            ("ablate_at", (s, ["L1 H1"], [], ["L2 H2"], 8, pos), slice(None),
             lambda tr: ablation_handlers.ablate_at(tr, s, ["L1 H1"], [], ["L2 H2"], 8, pos)),  # noqa: B023 (called in the loop)
            # a tab's event reads the page's mark first (attention_lens/shell/page_state.py)
            ("run", ("", s, 3), slice(0, 4), lambda tr: beam_handlers.beam_started(tr, s, 3)),  # noqa: B023 (called in the loop)
            ("across_layers_at", (s, "all layers", 0.15, pos), slice(None),
             lambda tr: layers_handlers.across_layers_at(tr, s, "all layers", 0.15, pos)),  # noqa: B023 (called in the loop)
            ("across_layers_follow", ("", s, "layer 1", 0.15, pos), slice(0, -2),  # then its note, its mark
             lambda tr: layers_handlers.across_layers_at(tr, s, "layer 1", 0.15, pos)),  # noqa: B023 (called in the loop)
            ("word_alignment_follow", ("", s, "saliency", pos), slice(0, -1),  # the page's table: its heads said
             lambda tr: as_table(*attribution_views.word_alignment_at(tr, s, "saliency", pos))),  # noqa: B023 (called in the loop)
            ("on_force", (s, 8, False, evt({"position": pos, "piece": "▁the"})), slice(0, 3),  # before the top-k
             lambda tr: decoding_views.force_at(tr, s, pos, "▁the", 8, False)[:3]),  # noqa: B023 (called in the loop)
            ("on_open", (s, evt({"kind": "cross", "layer": 0, "head": 1, "position": pos})), slice(None),
             lambda tr: decoding_views.inside_at(tr, s, pos, "cross", 0, 1)),  # noqa: B023 (called in the loop)
        ]
        for name, args, part, handler in events:
            other_key = other.config.direction  # the other user picks their model and starts a sentence
            fn("picked")(other_key)
            fn("start")(users[other_key][0], 8, False, other_key)
            elem = {"run": "beam_size", "on_open": "inside"}.get(name)
            out = fn(name, elem)(*args)
            answer = fingerprint(out[part] if len(out) > 1 else out[0])
            mine, theirs = fingerprint(handler(own)), fingerprint(handler(other))
            assert mine != theirs, f"{name}: the two models answer alike, so this check could not fail"
            assert answer == mine, f"{key}'s {name} answered with another model"
