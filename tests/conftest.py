import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
# Gradio's file cache (exports, uploads) for this test session alone, removed at its end: tests that export
# without a cache of their own would otherwise leave megabytes in the machine's <tmp>/gradio on every run. Set
# before anything imports gradio (some of its modules read the variable at import); subprocesses inherit it.
# A session that was killed (no teardown) leaves its folder: the next session removes those of dead processes.
GRADIO_PREFIX = "attention-lens-tests-gradio-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


for _old in Path(tempfile.gettempdir()).glob(f"{GRADIO_PREFIX}*-*"):
    _pid = _old.name[len(GRADIO_PREFIX):].split("-")[0]
    if _pid.isdigit() and not _alive(int(_pid)):
        shutil.rmtree(_old, ignore_errors=True)
GRADIO_TEMP_DIR = tempfile.mkdtemp(prefix=f"{GRADIO_PREFIX}{os.getpid()}-")
os.environ["GRADIO_TEMP_DIR"] = GRADIO_TEMP_DIR
# The live classes' database (attention_lens/live/store.py) in the same folder, never the user's data folder;
# subprocesses (app.py in the tests that restart it) inherit it
os.environ["ATTENTION_LENS_DATA"] = os.path.join(GRADIO_TEMP_DIR, "data")

import importlib.util

import pytest
import torch

from transformer.decode.decoding import Translator
from transformer.model.checkpoint import save_checkpoint
from transformer.model.config import ModelConfig
from transformer.model.model import Transformer
from transformer.model.tokenizer import Tokenizer
from transformer.train import data as D
from transformer.train.synthetic import tiny_corpus

torch.set_num_threads(1)
# The whole suite can run on a GPU: ATTENTION_LENS_TEST_DEVICE=cuda python -m pytest
DEVICE = os.environ.get("ATTENTION_LENS_TEST_DEVICE", "cpu")


@pytest.fixture(scope="session", autouse=True)
def gradio_temp_dir():
    """The session's GRADIO_TEMP_DIR (see above), removed when the session ends."""
    yield GRADIO_TEMP_DIR
    shutil.rmtree(GRADIO_TEMP_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    return tiny_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="session")
def tiny_pairs(tiny_dir):
    return D.load_pairs(tiny_dir, "train")


@pytest.fixture(scope="session")
def tiny_tok(tiny_pairs):
    return Tokenizer.train([s for p in tiny_pairs for s in p], vocab_size=60)


@pytest.fixture(scope="session")
def tiny_trained(tiny_tok, tiny_pairs, tmp_path_factory):
    """A tiny model overfitted on the tiny corpus, saved as a checkpoint directory."""
    from tests.helpers import overfit
    model = overfit(tiny_tok, tiny_pairs)
    ckpt = tmp_path_factory.mktemp("ckpt")
    save_checkpoint(ckpt, model, tiny_tok, half=False)
    return ckpt


@pytest.fixture()
def tiny_translator(tiny_trained):
    return Translator.load(tiny_trained, device=DEVICE)


# -- the browser tests' fixtures (their helpers: tests/browser.py)

@pytest.fixture(scope="module")
def translator():
    """The shipped checkpoint's Translator on DEVICE, one per test module (the model the browser tests drive)."""
    from transformer.model.checkpoint import DEFAULT_CHECKPOINT
    return Translator.load(DEFAULT_CHECKPOINT, device=DEVICE)


@pytest.fixture(scope="module")
def served_browser(translator):
    """(url, browser): `translator`'s app served in this process on a free loopback port, and Debian's Chromium
    (skipped without it; CI fails instead). Each module opens its pages at the size it needs (browser.open_app)."""
    from tests.browser import browser, require_chromium, serve
    require_chromium()
    with serve(translator) as url, browser() as b:
        yield url, b


def small_model(vocab=50, **kw) -> Transformer:
    cfg = {"vocab_size": vocab, "d_model": 32, "n_heads": 4, "n_encoder_layers": 2, "n_decoder_layers": 2,
           "d_ff": 64, "dropout": 0.0, "attn_dropout": 0.0, "max_len": 64}
    cfg.update(kw)
    torch.manual_seed(0)
    return Transformer(ModelConfig(**cfg)).eval()


@pytest.fixture(scope="session")
def tiny_en_de_dir(tiny_tok, tiny_pairs, tmp_path_factory):
    """The tiny corpus the other way round, English -> German, as a checkpoint directory."""
    from tests.helpers import overfit
    model = overfit(tiny_tok, [(en, de) for de, en in tiny_pairs], src_lang="en", tgt_lang="de")
    ckpt = tmp_path_factory.mktemp("ckpt-en-de")
    save_checkpoint(ckpt, model, tiny_tok, half=False)
    return ckpt


@pytest.fixture()
def tiny_en_de(tiny_en_de_dir):
    return Translator.load(tiny_en_de_dir, device=DEVICE)


@pytest.fixture(scope="module")
def tiny_page(tiny_trained):
    """A 1280x800 page on the tiny model's app, one per test module (browser tests that need no real model)."""
    from tests.browser import browser, open_app, require_chromium, serve
    require_chromium()
    with serve(Translator.load(tiny_trained, "cpu")) as url, browser() as b:
        yield open_app(b, url, 1280, 800)


# The GPU lane (.ci/gpu) runs the suite on a lent machine that has torch but lacks some of the app's packages
# (gradio, plotly, py3langid: no registry can be reached there). Under ATTENTION_LENS_LANE=gpu a test that fails
# because such a package is not installed is reported as skipped, with the package named; everywhere else (CI,
# here) a missing package stays a failure.
def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


if os.environ.get("ATTENTION_LENS_LANE") == "gpu":
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        rep = outcome.get_result()
        if rep.failed and call.excinfo is not None and call.excinfo.errisinstance(ModuleNotFoundError):
            name = (call.excinfo.value.name or "").split(".")[0]
            ours = {"transformer", "attention_lens", "benchmarks", "tests", "app"}
            if name and name not in ours and not _installed(name):
                rep.outcome = "skipped"
                rep.longrepr = (str(item.path), item.location[1] or 0, f"needs {name}, not installed on this machine")
