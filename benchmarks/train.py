"""python -m benchmarks.train [--steps 15] [--rounds 3]

Training speed of our Transformer vs torch.nn.Transformer of the same size (same embedding, positions,
tied projection), on the same Multi30k batches, rounds interleaved so load changes hit both alike.
Prints tokens/s; asserts nothing.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

import torch
from torch import nn

from transformer.model.config import ModelConfig
from transformer.model.layers import SinusoidalPositions
from transformer.model.model import Transformer
from transformer.model.tokenizer import Tokenizer
from transformer.train import data as D
from transformer.train.steps import encode_pairs, loss_fn, make_tensors


class TorchReference(nn.Module):
    """nn.Transformer with the same embedding, positions, tied projection and size as ours."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.positions = SinusoidalPositions(cfg.d_model, cfg.max_len)
        self.core = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.d_ff,
                                   cfg.dropout, batch_first=True, norm_first=True)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, src, tgt):
        e = lambda x: self.drop(self.embed(x) * math.sqrt(self.cfg.d_model) + self.positions(x.size(1)))
        T = tgt.size(1)
        h = self.core(e(src), e(tgt), tgt_mask=nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.bool),
                      src_key_padding_mask=src == 0, tgt_key_padding_mask=tgt == 0, memory_key_padding_mask=src == 0,
                      tgt_is_causal=True)
        return h @ self.embed.weight.t()


def bench_train(a):
    torch.manual_seed(0)
    pairs = D.load_pairs(a.data_dir, "train")[:6000]
    tok = Tokenizer.train([s for p in pairs for s in p], 8000)
    cfg = ModelConfig(vocab_size=len(tok))
    ex = encode_pairs(tok, pairs, cfg.max_len)
    batches = D.make_batches([(len(s), len(t) + 1) for s, t in ex], a.max_tokens, seed=0)[:a.steps + 2]
    tensors = [make_tensors(ex, b, 0, 2, 3, "cpu") for b in batches]
    models = {"ours": Transformer(cfg), "nn.Transformer": TorchReference(cfg)}
    results = {name: [] for name in models}
    print(f"{sum(p.numel() for p in models['ours'].parameters()):,} vs "
          f"{sum(p.numel() for p in models['nn.Transformer'].parameters()):,} parameters; "
          f"{a.steps} steps of <= {a.max_tokens} tokens; {torch.get_num_threads()} threads", flush=True)
    opts = {n: torch.optim.AdamW(m.parameters(), lr=1e-4) for n, m in models.items()}
    for round_ in range(a.rounds):  # interleave the two models so load changes hit both alike
        for name, model in models.items():
            model.train()
            ntok, t0 = 0, None
            for i, (s, ti, to) in enumerate(tensors):
                if i == 2:
                    t0, ntok = time.perf_counter(), 0
                loss = loss_fn(model(s, ti), to, 0, 0.1) / (to != 0).sum()
                opts[name].zero_grad()
                loss.backward()
                opts[name].step()
                ntok += int((s != 0).sum() + (to != 0).sum())
            results[name].append(ntok / (time.perf_counter() - t0))
    for name, xs in results.items():
        print(f"  {name:15s} {statistics.median(xs):8.0f} tokens/s (median of {len(xs)} rounds: "
              f"{', '.join(f'{x:.0f}' for x in xs)})")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR))
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=3500)
    bench_train(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
