import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest
import torch

from transformer.checkpoint import save_checkpoint
from transformer.config import ModelConfig
from transformer.decoding import Translator
from transformer.model import Transformer
from transformer.tokenizer import Tokenizer
from transformer.train import tiny_corpus
from transformer import data as D

torch.set_num_threads(1)
# The whole suite can run on a GPU: ATTENTION_LENS_TEST_DEVICE=cuda python -m pytest
DEVICE = os.environ.get("ATTENTION_LENS_TEST_DEVICE", "cpu")


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


def small_model(vocab=50, **kw) -> Transformer:
    cfg = dict(vocab_size=vocab, d_model=32, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=64,
               dropout=0.0, attn_dropout=0.0, max_len=64)
    cfg.update(kw)
    torch.manual_seed(0)
    return Transformer(ModelConfig(**cfg)).eval()
