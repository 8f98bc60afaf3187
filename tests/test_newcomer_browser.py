"""Where a newcomer stopped (issue 26), each reproduced in headless Chromium at a laptop's 1280x800: results of an
earlier sentence under a new one's name, ablation that compares another sequence than the one shown, the top-k
after </s>, ablation that leaves you guessing, evaluation sets without names, the untrained snapshot, plurals.
Expectations are computed from the model, its atlas and its files at test time; nothing is typed in."""
from __future__ import annotations

import json

import pytest

from tests.browser import chips, choose_model, open_app, pick, renders, serve, start, step_no, wait_render
from transformer.interpret.figures import label
from transformer.interpret.roles import load_atlas
from transformer.model.checkpoint import LOG
from transformer.model.metrics import read_metrics

pytestmark = pytest.mark.browser
W, H = 1280, 800
DOG, STATION = "Ein Hund rennt durch den Schnee.", "Wo ist der Bahnhof?"
GROUPS = {"encoder_self": "#ablate_enc", "decoder_self": "#ablate_dec", "cross": "#ablate_cross"}


@pytest.fixture(scope="module")
def app(served_browser):
    url, b = served_browser
    yield open_app(b, url, width=W, height=H)


@pytest.fixture
def page(app):
    """The page on the Translate tab, scrolled to the top, whatever the previous test left."""
    app.get_by_role("tab", name="Translate").click()
    app.evaluate("window.scrollTo(0, 0)")
    return app


def tab(page, name):
    page.get_by_role("tab", name=name).click()


def ticked(page, kind) -> list[str]:
    return page.eval_on_selector_all(f"{GROUPS[kind]} input[type=checkbox]",
                                     "es => es.filter(e => e.checked).map(e => e.closest('label').innerText.trim())")


def clear_ticks(page):
    for kind, group in GROUPS.items():
        for name in ticked(page, kind):
            page.locator(group).get_by_label(name).uncheck()


def view_renders(page, view_id="attention_ablated") -> int:
    return int(page.evaluate(f"(document.getElementById('{view_id}')?.lens || {{renders: 0}}).renders"))


def compare(page, labels: dict[str, list[str]] | None = None, button="#ablate_run"):
    """Tick these heads (None: keep the ticks), press Compare (or `button`) and wait for the maps and the note."""
    if labels is not None:
        clear_ticks(page)
        for kind, labs in labels.items():
            for lab in labs:
                page.locator(GROUPS[kind]).get_by_label(lab).check()
    n = view_renders(page)
    page.click(button)
    page.wait_for_function(f"(document.getElementById('attention_ablated')?.lens || {{renders: 0}}).renders > {n}",
                           timeout=60000)
    page.wait_for_function("document.querySelector('#ablate_note textarea')?.value.includes('switched off')",
                           timeout=20000)


def table(page, elem) -> list[list[str]]:
    """The rows of a gr.Dataframe as shown."""
    return page.eval_on_selector_all(f"#{elem} .virtual-row", "rs => rs.map(r => [...r.querySelectorAll("
                                     "'.body-cell')].map(c => c.textContent.trim()))")


def replay(tr, text, shown, heads=None):
    """Decode `text` with `heads` off, the pieces `shown` forced at their positions, greedy elsewhere: worked out
    here apart from the code under test (attention_lens/ablation_help.replay, the sessions' key/value cache): one whole
    teacher-forced pass of the model over the prefix for each position, the heads zeroed by HeadAblation."""
    import torch

    from transformer.interpret.capture import HeadAblation
    plan = {i: shown.target_ids[i] for i, p in enumerate(shown.positions) if i and p.forced}
    device = next(tr.model.parameters()).device
    src = torch.tensor([tr.source_ids(text)], device=device)
    ids = [tr.config.bos_id]
    with torch.no_grad(), HeadAblation(tr.model, heads or []):
        while ids[-1] != tr.config.eos_id and len(ids) < tr.config.max_len:
            logits = tr.model(src, torch.tensor([ids], device=device))  # (1, T, V)
            ids.append(plan.get(len(ids), int(logits[0, -1].float().argmax())))
    return tr.tokenizer.decode(ids)


# -- 1. what a tab shows belongs to the sentence it names ----------------------------------------------

# the matrix's columns as drawn; null when none is drawn or what is drawn is undrawn: results computed for an
# earlier sentence or model are kept out of sight (attention_lens/shell/page_state.py FOLLOW), not emptied
MATRIX_X = "(() => { const d = document.querySelector('#align_matrix .js-plotly-plot'); " \
           "return d && d.layout && d.checkVisibility({visibilityProperty: true}) ? d.layout.xaxis.ticktext : null; " \
           "})()"


def wait_matrix(page, columns, timeout=60.0):
    """Until the alignment matrix's columns are `columns` (None: no matrix drawn)."""
    import time
    end, now = time.monotonic() + timeout, None
    while time.monotonic() < end:
        now = page.evaluate(MATRIX_X)
        if now == columns:
            return
        page.wait_for_timeout(200)
    raise AssertionError(f"the alignment matrix shows {now}, not {columns}")


def test_a_new_sentence_clears_what_the_old_one_left_in_every_tab(page, translator):
    tr = translator
    start(page, DOG)
    tab(page, "Head ablation")
    compare(page, {"cross": ["L1 H1"]})
    assert page.input_value("#intact_translation textarea") == tr.translate(DOG)
    tab(page, "Beam search")
    page.click("#beam_run")
    page.wait_for_selector("#beam_tree .js-plotly-plot", timeout=60000)
    tab(page, "Across layers")
    dog_src = [label(p) for p in tr.tokenizer.pieces(tr.source_ids(DOG))]
    wait_matrix(page, dog_src)

    tab(page, "Translate")
    start(page, STATION)
    tab(page, "Head ablation")
    assert STATION in page.inner_text("#ablate_sentence")
    # the dog's results are out of sight (drawn for the page's earlier mark: attention_lens/shell/page_state.py)
    page.wait_for_selector("#intact_translation textarea", state="hidden", timeout=20000)
    for elem in ("#ablated_translation textarea", "#ablate_probs", "#ablate_topk", "#attention_ablated"):
        assert not page.is_visible(elem), elem  # no map or table of the dog under the station's name
    assert ticked(page, "cross") == ["L1 H1"]  # the user's choice of heads stays
    compare(page)  # and Compare works on the new sentence
    assert page.input_value("#intact_translation textarea") == tr.translate(STATION)
    assert page.is_visible("#attention_ablated")
    assert chips(page, "attention_ablated")[0] == "<s>"

    tab(page, "Beam search")
    assert not page.is_visible("#beam_tree .js-plotly-plot") and not page.is_visible("#attention_beam")
    page.click("#beam_run")
    page.wait_for_selector("#beam_tree .js-plotly-plot", state="visible", timeout=60000)
    assert page.is_visible("#attention_beam")

    tab(page, "Across layers")  # recomputed when opened
    station_src = [label(p) for p in tr.tokenizer.pieces(tr.source_ids(STATION))]
    wait_matrix(page, station_src)
    tab(page, "Translate")
    assert page.errors == []


# -- 2. ablation compares the sequence the maps show, forced pieces included ---------------------------

def test_ablation_compares_the_shown_sequence_forced_pieces_included(page, translator):
    tr = translator
    start(page, DOG)
    greedy = tr.start(DOG).run()
    # the step whose second choice is the most probable one: the what-if a student tries first
    t = max(range(greedy.cursor - 1), key=lambda i: greedy.topk(2, position=i)[1][1])
    page.evaluate(f"window.__lens.ctl.goto({t})")
    page.wait_for_function(f"window.__lens.state.t === {t}")
    alt = page.eval_on_selector("#topk .topk-list button:nth-child(2)", "e => e.dataset.piece")
    seq = page.evaluate("window.__lens.state.traj.seq")
    page.click("#topk .topk-list button:nth-child(2)")
    page.wait_for_function(f"window.__lens.state.traj.seq !== {seq}", timeout=60000)
    assert step_no(page) == t + 1
    shown = tr.start(DOG)
    for _ in range(t):
        shown.step()
    shown.force(alt)
    shown.run()
    heads = [("cross", 0, 0)]
    tab(page, "Head ablation")
    compare(page, {"cross": ["L1 H1"]})
    intact = page.input_value("#intact_translation textarea")
    ablated = page.input_value("#ablated_translation textarea")
    assert intact == shown.translation != greedy.translation  # what the maps show, not the greedy decoding
    assert ablated == replay(tr, DOG, shown, heads)
    assert tr.tokenizer.decode([tr.tokenizer.piece_id(alt)]).strip() in ablated  # forced on both sides
    assert [r[1] for r in table(page, "ablate_probs")] == shown.target_tokens[1:]
    assert "forced" in page.input_value("#ablate_note textarea")
    tab(page, "Translate")
    assert page.errors == []


# -- 3. the top-k at the end of the sentence is the last step that predicts a piece -------------------

def test_topk_at_the_end_is_the_last_step_that_predicts_a_piece(page, translator):
    tr = translator
    start(page, DOG)
    n = renders(page)
    page.click("#run")
    wait_render(page, n)
    done = tr.start(DOG).run()
    last = done.cursor - 1  # the step whose prediction is </s>
    tab(page, "Head ablation")
    compare(page, {"cross": ["L1 H1"]})
    rows = table(page, "ablate_topk")
    expected = [p for p, _ in done.topk(len(rows), position=last)]
    assert [r[1] for r in rows] == expected and expected[0] == "</s>"
    assert f"step {last}" in page.input_value("#ablate_note textarea")
    tab(page, "Translate")
    assert page.errors == []


# -- 4. ablation that shows something: whole layers and kinds, the atlas's suggestions, why -----------

def test_ablation_offers_whole_layers_kinds_suggestions_and_says_why_one_head_rarely_shows(page, translator):
    tr = translator
    start(page, DOG)
    tab(page, "Head ablation")
    H = tr.config.n_heads
    page.click("#ablate_all_cross")
    page.wait_for_function("document.querySelectorAll('#ablate_cross input:checked').length > 0")
    assert len(ticked(page, "cross")) == H * tr.config.n_decoder_layers
    page.click("#ablate_clear")
    page.wait_for_function("document.querySelectorAll('#ablate_cross input:checked').length === 0")
    assert all(ticked(page, k) == [] for k in GROUPS)
    page.click("#ablate_layer_encoder_self_2")
    page.wait_for_function("document.querySelectorAll('#ablate_enc input:checked').length > 0")
    assert ticked(page, "encoder_self") == [f"L2 H{h + 1}" for h in range(H)]
    page.click("#ablate_layer_decoder_self_1")
    page.wait_for_function("document.querySelectorAll('#ablate_dec input:checked').length > 0")
    assert ticked(page, "encoder_self") == [f"L2 H{h + 1}" for h in range(H)]  # added to, not replaced
    assert ticked(page, "decoder_self") == [f"L1 H{h + 1}" for h in range(H)]

    atlas = load_atlas(tr.checkpoint_dir)
    top = max(atlas["heads"], key=lambda h: h["bleu_drop"])
    label = page.inner_text("#ablate_suggest_1")
    assert f"L{top['layer'] + 1} H{top['head'] + 1}" in label and f"{top['bleu_drop']:.2f}" in label
    compare(page, button="#ablate_suggest_1")  # one click: ticks the atlas's most important head and compares
    assert ticked(page, top["kind"]) == [f"L{top['layer'] + 1} H{top['head'] + 1}"]
    assert sum(len(ticked(page, k)) for k in GROUPS) == 1
    assert page.input_value("#intact_translation textarea") == tr.translate(DOG)
    why = page.inner_text("#ablate_why")  # plain by default; the paper in detail (issue 39 item 5)
    assert "share the work" in why and "Michel" not in why
    page.click("#explain_detail")
    why = page.inner_text("#ablate_why")
    assert "Michel et al. 2019" in why and "redundan" in why
    page.click("#explain_plain")
    assert page.is_visible("#ablate_why") and page.is_visible("#ablate_suggest_1")
    tab(page, "Translate")
    assert page.errors == []


# -- 5. every evaluation set named where a number is shown; titles not cut; one point per epoch ------

def spread_counts(atlas, metrics) -> tuple[int, int]:
    """(captions, everyday) among the atlas's sentences, taken evenly across Multi30k val + Tatoeba val."""
    from transformer.train.atlas import spread
    m, t = (metrics["test"][f"{s}/greedy"]["sentences"] for s in ("val", "tatoeba_val"))
    picked = spread(["caption"] * m + ["everyday"] * t, atlas["sentences"])
    return picked.count("caption"), picked.count("everyday")


def test_every_number_names_its_evaluation_set(page, translator):
    tr = translator
    atlas, metrics = load_atlas(tr.checkpoint_dir), read_metrics(tr.checkpoint_dir)
    captions, everyday = spread_counts(atlas, metrics)
    page.click("#explain_detail")  # the sets' names are the detailed texts' (issue 39 item 5: plain by default)
    tab(page, "Head atlas")
    page.wait_for_function("document.getElementById('atlas')?.atlas && "
                           "document.getElementById('atlas')?.atlas.renders > 0", timeout=30000)
    summary = page.inner_text("#atlas [data-role=summary]")
    assert f"{atlas['sentences']} validation sentences" in summary
    assert f"{captions} picture captions" in summary and f"{everyday} everyday" in summary
    assert "mixed_val" not in page.evaluate("JSON.stringify(document.querySelector('#atlas [data-role=curve]')"
                                            ".layout.yaxis.title)")
    tab(page, "Model")
    card = page.inner_text("#model_card")
    for split, words in (("val", "picture captions"), ("tatoeba_val", "everyday"),
                         ("test_2016_flickr", "picture captions"), ("tatoeba_test", "everyday")):
        n = metrics["test"][f"{split}/greedy"]["sentences"]
        assert f"{n:,} {words}" in card, (split, card)
    assert f"{atlas['sentences']} validation sentences" in card and str(atlas["bleu"]) in card  # the atlas's number
    page.click("#explain_plain")
    card = page.inner_text("#model_card")  # plainly: the sizes, without the sets' file names
    assert f"{metrics['test']['val/greedy']['sentences']:,} picture descriptions" in card and "Multi30k val" not in card
    tab(page, "Translate")
    assert page.errors == []


def test_map_titles_show_the_whole_role(page, translator):
    start(page, DOG)
    atlas = load_atlas(translator.checkpoint_dir)
    longest = max((h for h in atlas["heads"] if h["kind"] != "encoder_self"), key=lambda h: len(h["role"]))
    pick(page, longest["kind"], longest["layer"], longest["head"])
    title = page.locator("#attention [data-role=title]")
    assert f"role: {longest['role']}" in title.inner_text()
    assert page.evaluate("(e => e.scrollWidth <= e.clientWidth + 1)(document.querySelector("
                         "'#attention [data-role=title]'))"), "the title is cut"
    pick(page, "cross", 0, 0)


def test_training_curves_draw_one_point_per_epoch_and_mark_pauses(page, translator):
    log = json.loads((translator.checkpoint_dir / LOG).read_text(encoding="utf-8"))
    epochs = sorted({e["epoch"] for e in log["epochs"]})
    paused = [e for e in log["epochs"] if "paused_at_group" in e]
    tab(page, "Model")
    page.wait_for_selector("#curves .js-plotly-plot", timeout=30000)
    data = page.evaluate("document.querySelector('#curves .js-plotly-plot').data.map(d => "
                         "({name: d.name, x: d.x, y: d.y, mode: d.mode}))")
    curves = [d for d in data if d["name"] in ("train loss (smoothed)", "validation loss")
              or d["name"].startswith("validation BLEU")]
    assert len(curves) == 3
    for d in curves:
        assert d["x"] == epochs, d["name"]
    completed = {e["epoch"]: e for e in log["epochs"] if "paused_at_group" not in e}
    bleu = next(d for d in curves if d["name"].startswith("validation BLEU"))
    assert bleu["y"] == [completed[e]["val_bleu"] for e in epochs]
    if paused:
        layout = page.evaluate("document.querySelector('#curves .js-plotly-plot').layout")
        marks = [s for s in layout.get("shapes", []) if s.get("line", {}).get("dash") == "dot"]
        assert len(marks) == len(paused)
        assert "stopped and started again" in page.inner_text("#curves_note")  # plain by default
    tab(page, "Translate")


# -- 6. the untrained snapshot teaches something -------------------------------------------------------

def test_the_untrained_snapshot_says_what_an_untrained_model_does(page, translator):
    from attention_lens.learned.tab import load_history
    history = load_history(translator)
    assert history.epochs[0] == 0
    tab(page, "Attention being learned")
    page.wait_for_selector("#learned_plot .js-plotly-plot", timeout=30000)
    box = page.locator("#learned_epoch input[type=number]")
    box.fill("1")
    box.press("Enter")
    page.wait_for_function("(document.querySelector('#learned_point') || {innerText: ''}).innerText"
                           ".includes('Snapshot 1 ')", timeout=30000)  # (null until the tab's parts mount)
    text = page.input_value("#learned_translation textarea")
    where = page.inner_text("#learned_point")
    pieces = [p for p in history.target(0, 0)[1:] if p != "</s>"]
    assert len(set(pieces)) == 1  # the shipped history: one piece over and over
    assert text != "" and "repeat" in text and str(len(pieces)) in text, text
    assert "random" in where and "row" in where, where
    last = history.epochs[-1]
    final = "".join(p for p in history.target(0, last) if p not in ("<s>", "</s>")).replace("▁", " ").strip()
    assert final in where  # what it learns to say instead
    tab(page, "Translate")


# -- 7. one piece, one head: singular and plural -------------------------------------------------------

def test_one_head_is_said_in_the_singular(page, translator):
    start(page, DOG)
    tab(page, "Head ablation")
    compare(page, {"cross": ["L1 H1"]})
    note = page.input_value("#ablate_note textarea")
    assert "1 head switched off" in note and "(s)" not in note
    tab(page, "Translate")


def test_step_zero_says_one_target_piece(page, translator):
    """The view's status line (assets/lens_labels.js drawStatus) at step 0: one target piece, <s>."""
    start(page, DOG)
    status = page.inner_text("#attention [data-role=status]")
    assert "· 1 target piece" in status and "1 target pieces" not in status, status
    n = len(translator.source_ids(DOG))
    assert f"· {n} source pieces" in status


# -- 1 (the model switch): the tiny models of tests/conftest.py --------------------------------------

@pytest.fixture(scope="module")
def two_page(served_browser, tiny_trained, tiny_en_de_dir):
    """The app of two tiny models (German -> English, English -> German), in the module's Chromium."""
    from transformer.decode.decoding import Translator
    two = [Translator.load(tiny_trained, "cpu"), Translator.load(tiny_en_de_dir, "cpu")]
    with serve(two) as url:
        page = open_app(served_browser[1], url, W, H)
        yield page, two
        page.close()


def test_switching_the_model_clears_what_the_old_one_left(two_page):
    page, (_de, _en) = two_page
    start(page, "Ein Hund rennt.")
    tab(page, "Across layers")
    page.wait_for_function(f"{MATRIX_X} !== null", timeout=60000)
    tab(page, "Head ablation")
    compare(page, {"cross": ["L1 H1"]})
    assert page.input_value("#intact_translation textarea") != ""
    tab(page, "Translate")
    choose_model(page, "English → German")
    tab(page, "Across layers")
    wait_matrix(page, None, 20)  # not the German sentence's alignment
    tab(page, "Head ablation")
    # a switch starts no sentence (issue 39 item 1): the old results go and no note speaks of "this sentence"
    page.wait_for_selector("#intact_translation textarea", state="hidden", timeout=20000)
    assert not page.is_visible("#ablate_probs") and not page.is_visible("#attention_ablated")
    assert "No sentence started yet" in page.inner_text("#ablate_sentence")
    tab(page, "Translate")
    assert page.errors == []
