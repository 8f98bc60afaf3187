"""The README's Python examples run as written, against the shipped checkpoint (whatever it is: nothing here
depends on its translations)."""
import ast
import re
from pathlib import Path

import pytest

from tests.conftest import DEVICE
from transformer.decode.decoding import Translator
from transformer.model.checkpoint import DEFAULT_CHECKPOINT

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.DOTALL)


def block(first_line: str) -> str:
    found = [b for b in BLOCKS if b.startswith(first_line)]
    assert len(found) == 1, f"the README has {len(found)} python blocks starting with {first_line!r}"
    return found[0]


def test_the_notebook_example_runs_and_forces_what_it_says():
    code = block("from transformer import Translator")
    ns = {}
    exec(compile(code, "README.md (notebook)", "exec"), ns)  # noqa: S102 (runs the README's own example)
    s, tr = ns["s"], ns["tr"]
    forced = re.search(r'^s\.force\("([^"]+)"\)', code, re.MULTILINE).group(1)
    assert s.positions[1].forced and s.target_tokens[1] == forced  # the first piece is the one the README forces
    assert s.done and s.translation.startswith(tr.tokenizer.decode([s.target_ids[1]]))


def test_the_api_example_runs_against_the_served_app():
    pytest.importorskip("gradio_client")
    from tests.serving import serving
    code = block("from gradio_client import Client")
    assert '"http://127.0.0.1:7860/"' in code
    from transformer.model.checkpoint import find_checkpoints
    with serving([Translator.load(p, device=DEVICE) for p in find_checkpoints(None)]) as url:  # as app.py serves
        ns = {}
        exec(compile(code.replace('"http://127.0.0.1:7860/"', repr(url)), "README.md (API)", "exec"), ns)  # noqa: S102 (runs the README's own example)
        c = ns["c"]
        try:
            assert isinstance(ns["d"], dict) and {"encoder_self", "decoder_self", "cross"} <= set(ns["d"])
            assert isinstance(ns["z"], dict) and set(ns["z"]["cross"]) >= {"shape", "b64"}
        finally:
            c.close()


def test_the_values_the_notebook_example_shows_are_what_the_shipped_model_gives():
    """The comments after tr.translate(...), s.topk(3) and s.translation are today's outputs, not old ones."""
    code = block("from transformer import Translator")
    tr = Translator.load(DEFAULT_CHECKPOINT, device=DEVICE)
    text, shown = re.search(r'^tr\.translate\("([^"]+)"\)\s+# (\'.*\')$', code, re.MULTILINE).groups()
    assert tr.translate(text) == ast.literal_eval(shown)
    started = re.search(r'^s = tr\.start\("([^"]+)"\)', code, re.MULTILINE).group(1)
    shown = ast.literal_eval(re.search(r"^s\.topk\(3\)\s+# (\[.*\])$", code, re.MULTILINE).group(1))
    assert [(piece, round(p, 3)) for piece, p in tr.start(started).topk(3)] == shown
    ns = {}
    exec(compile(code, "README.md (notebook)", "exec"), ns)  # noqa: S102 (runs the README's own example)
    said = re.search(r"^s\.translation\s+# (\'.*\')$", code, re.MULTILINE).group(1)
    assert ns["s"].translation == ast.literal_eval(said)


def test_the_translation_the_api_example_shows_is_what_the_app_gives():
    pytest.importorskip("gradio_client")
    from attention_lens.shell.api import api_translate
    code = block("from gradio_client import Client")
    text, shown = re.search(r'^c\.predict\("([^"]+)", api_name="/translate"\)\s+# -> (".*")$', code,
                            re.MULTILINE).groups()
    assert api_translate(Translator.load(DEFAULT_CHECKPOINT, device=DEVICE), text) == ast.literal_eval(shown)


def test_the_readme_bleu_table_is_what_metrics_json_records():
    """The README's test-set table is typed in: each figure must be the shipped checkpoint's own (greedy, cased),
    the "13+ words" column the sentences of 13 or more source words of that Tatoeba test (evaluate --subsets)."""
    import json

    from transformer.model.checkpoint import SHIPPED
    header = re.search(r"^\| model \| Tatoeba test[^|]*\| 13\+ words[^|]*\| Multi30k test_2016_flickr[^|]*\|$",
                       README, re.MULTILINE)
    assert header, "the README's BLEU table is missing"
    rows = {"German → English": "de-en", "English → German": "en-de"}
    seen = 0
    for line in README[header.end():].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        m = json.loads((SHIPPED / rows[cells[0]] / "metrics.json").read_text())["test"]
        recorded = (m["tatoeba_test/greedy"]["bleu"], m["tatoeba_test/greedy"]["subsets"]["13+ words"]["bleu"],
                    m["test_2016_flickr/greedy"]["bleu"])
        assert tuple(float(c) for c in cells[1:]) == recorded, (cells[0], cells[1:], recorded)
        seen += 1
    assert seen == 2

