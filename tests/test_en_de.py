"""The shipped English -> German model (issue 30): it loads by name, records its languages, and translates everyday
sentences sensibly, German word order included (the verb last in a subordinate clause, the participle at the end)."""
from __future__ import annotations

import pytest

from tests.conftest import DEVICE
from transformer.decode.decoding import Translator
from transformer.model.checkpoint import SHIPPED

pytestmark = pytest.mark.skipif(not (SHIPPED / "en-de" / "model.pt").exists(), reason="no checkpoints/en-de")


@pytest.fixture(scope="module")
def en_de():
    return Translator.load("en-de", device=DEVICE)


def test_it_loads_by_name_and_knows_its_languages(en_de):
    assert en_de.config.direction == "en-de" and en_de.checkpoint_dir == SHIPPED / "en-de"
    assert en_de.model.num_parameters() <= 20_000_000
    assert (SHIPPED / "en-de" / "model.pt").stat().st_size <= 40e6


@pytest.mark.parametrize("english, words, ending", [
    ("I love you.", ["liebe"], "."),
    ("Where is the station?", ["Wo", "Bahnhof"], "?"),
    ("The weather is nice today.", ["Wetter", "heute"], "."),
    ("We have seen the film.", ["Wir", "Film"], "gesehen."),            # the participle at the end
    ("I know that he is coming tomorrow.", ["dass", "morgen"], "kommt."),  # the verb last in the clause
    ("She calls her mother every day.", ["ruft", "Mutter"], " an."),  # the separable verb split: ruft ... an
    # the verb at the end either way: "Ich rufe dich morgen an." (epoch 4) or "Ich werde dich morgen anrufen." (5 to 7)
    ("I will call you tomorrow.", ["dich morgen"], ("an.", "anrufen.")),
])
def test_everyday_sentences(en_de, english, words, ending):
    german = en_de.translate(english)
    assert all(w in german for w in words) and german.endswith(ending), german
