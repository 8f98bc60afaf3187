"""The caveats under the box in Chromium (the classroom issue, item 4): a 41-word sentence and a French one each get
theirs, a short everyday sentence none; what the page says is what the library says of the same input."""
import pytest

from tests.browser import open_app, start

pytestmark = pytest.mark.browser
LONG41 = ("Gestern Abend sind wir nach der Arbeit mit dem Fahrrad in die Stadt gefahren, weil meine Schwester uns zu "
          "ihrem schönen Geburtstag eingeladen hatte, und wir haben dort bis spät gegessen und über "
          "die alten Zeiten in unserem kleinen Dorf gesprochen.")


@pytest.fixture(scope="module")
def app(served_browser):
    url, b = served_browser
    yield open_app(b, url, width=1280, height=800)


def shown(page) -> list[str]:
    return page.eval_on_selector_all("#caveats .caveats:not([hidden]) li", "es => es.map(e => e.textContent)")


def test_long_and_french_input_get_their_caveat_and_a_short_one_none(app, translator):
    assert len(LONG41.split()) == 41
    for text in (LONG41, "Je voudrais un café, s'il vous plaît."):
        start(app, text)
        app.wait_for_selector("#caveats .caveats:not([hidden])")
        assert shown(app) == [f"\u26a0 {c['message']}" for c in translator.trajectory(text).caveats]
        assert app.locator("#caveats").is_visible()
    assert not any("41 words" in s for s in shown(app))  # the French sentence's replaced them
    assert any("French" in s for s in shown(app))
    start(app, "Ich bin müde.")
    app.wait_for_selector("#caveats .caveats[hidden]", state="attached")
    assert shown(app) == [] and app.errors == []
