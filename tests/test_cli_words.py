"""The command line in the user's language (issue 44 item 4): `python -m transformer.translate` says its help, notes
and errors in German when the locale is German (LC_ALL, LC_MESSAGES or LANG starting with de), from its own small
catalogue (transformer/decode/cli_texts/<lang>.toml; the library imports nothing of the app), a missing German word
falling
back to English; the translation itself is the model's, the same in both."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from transformer.decode import cli_words as W
from transformer.decode import translate
from transformer.decode.language import OTHER_NAMES, hint

ROOT = Path(__file__).resolve().parent.parent
FRENCH = "Je voudrais un café avec du lait, s'il vous plaît."


@pytest.mark.parametrize("env, lang", [({"LANG": "de_DE.UTF-8"}, "de"), ({"LANG": "de_AT"}, "de"),
                                       ({"LANG": "en_US.UTF-8"}, "en"), ({"LANG": "C.UTF-8"}, "en"), ({}, "en"),
                                       ({"LANG": "en_US.UTF-8", "LC_ALL": "de_CH.UTF-8"}, "de"),
                                       ({"LANG": "de_DE.UTF-8", "LC_MESSAGES": "en_GB.UTF-8"}, "en"),
                                       ({"LANG": "fr_FR.UTF-8"}, "en")])
def test_the_locale_chooses_the_language(env, lang):
    assert W.cli_lang(env) == lang


def test_every_word_and_language_name_is_german_too():
    assert W.missing("de") == []
    assert set(W.catalogue("de")["lang"]) == set(OTHER_NAMES) | {"de", "en"}
    assert W.language("fr", "de") == "Französisch" and W.language("fr", "en") == "French"


def test_a_missing_german_word_falls_back_to_english(monkeypatch):
    de = {k: v for k, v in W.catalogue("de").items() if k != "note"}
    monkeypatch.setattr(W, "catalogue", lambda lang, real=W.catalogue: de if lang == "de" else real(lang))
    assert W.said("note", "de", text="x") == "note: x" and W.missing("de") == ["note"]


def test_a_hint_is_said_from_its_details_in_german():
    found = hint(FRENCH, "de")
    assert found["kind"] == "other" and W.said_note(found, "de", "en", "hint") == found["message"]
    assert W.said_note(found, "de", "de", "hint") == ("Das sieht nach Französisch aus; die Modelle lesen nur "
                                                      "Deutsch und Englisch (dieses liest Deutsch).")


def run(argv, lang_env, capsys):
    status = translate.main(["--device", "cpu", *argv], env=lang_env)
    out, err = capsys.readouterr()
    return status, out, err


def test_the_cli_speaks_german_when_lang_is_german(capsys):
    status, out_de, err_de = run([FRENCH, "Ein Hund rennt durch den Schnee."], {"LANG": "de_DE.UTF-8"}, capsys)
    assert status == 0
    assert "Hinweis: Das sieht nach Französisch aus" in err_de and "note:" not in err_de, err_de
    status, out_en, err_en = run([FRENCH, "Ein Hund rennt durch den Schnee."], {"LANG": "en_US.UTF-8"}, capsys)
    assert "note: This looks like French" in err_en and "Hinweis" not in err_en, err_en
    assert out_de == out_en and len(out_de.splitlines()) == 2  # the model's translations: never translated
    status, _out, err = run(["▁"], {"LANG": "de_DE.UTF-8"}, capsys)
    assert status == 1 and err.strip() == "Fehler: Die Eingabe ist leer: Tippe einen Satz", err


def test_the_help_is_german_when_lang_is_german():
    env = {**os.environ, "LANG": "de_DE.UTF-8", "LC_ALL": "", "LC_MESSAGES": "", "OMP_NUM_THREADS": "1"}
    got = subprocess.run([sys.executable, "-m", "transformer.translate", "--help"], cwd=ROOT, env=env,
                         check=False, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    assert "Übersetzt jedes Argument" in got.stdout and "Quellsprache des Modells" in got.stdout, got.stdout
    assert "sentences in the model's source language" not in got.stdout
