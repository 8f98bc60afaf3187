import torch

from transformer.model.config import ModelConfig
from transformer.model.model import Transformer
from transformer.train.steps import encode_pairs, loss_fn, make_tensors


def overfit(tok, pairs, steps=300, seed=0, **config) -> Transformer:
    """A tiny model trained to memorise `pairs` (source, target); `config`: more ModelConfig fields (src_lang...)."""
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=len(tok), d_model=64, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=128,
                      dropout=0.0, attn_dropout=0.0, max_len=64, **config)
    model = Transformer(cfg)
    ex = encode_pairs(tok, pairs, cfg.max_len)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    s, ti, to = make_tensors(ex, list(range(len(ex))), cfg.pad_id, cfg.bos_id, cfg.eos_id, "cpu")
    model.train()
    for _ in range(steps):
        loss = loss_fn(model(s, ti), to, cfg.pad_id, 0.0) / (to != cfg.pad_id).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if loss.item() < 0.01:
            break
    return model.eval()
