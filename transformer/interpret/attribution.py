"""Where each predicted piece comes from: source and target-prefix attributions for a teacher-forced pair.

Rows follow the attention maps: row t is the decoder position whose INPUT is target token t (BOS at row 0)
and which PREDICTS token t+1; T = len(target ids). For every row, `source` (T, S) says how much each source
piece (EOS included) contributes and `target` (T, T) how much each target-prefix piece 0..t contributes
(zero above the diagonal: the decoder is causal). A row of `source` and `target` together sums to 1 (for
"attention", 0 when every cross-attention head is switched off: then nothing of the source reaches it).

Methods (`METHODS`; `attribute_ids(..., "contribution")` as well, for comparison):

- "alti": ALTI+ (Ferrando, Gállego, Alastruey, Escolano, Costa-jussà, EMNLP 2022, "Towards Opening the Black
  Box of Neural Machine Translation: Source and Target Contributions in the Transformer"), following their
  code, github.com/mt-upc/transformer-contributions-nmt, wrappers/transformer_wrapper.py:
  `FairseqTransformerHub.__get_contributions_module` (the per-token decomposition, contrib_type="l1"),
  `normalize_contrib` (norm_mode="min_sum" with the resultant's norm) and `get_contribution_rollout` (the
  encoder rollout `compute_joint_attention`, the joint cross/self matrix and the decoder `rollout`).
- "saliency": gradient × input. Row t: the gradient of log p(token t+1 | source, tokens 0..t) with respect
  to the TOKEN embeddings √d·E[id] of every source piece and every target piece (the sinusoidal positions,
  added after, are the same for every sentence and are not attributed), times those embeddings, the L2 norm
  per piece, each row normalised so that source + target sum to 1. The last row has no next token in the
  pair (it reads EOS, or the cursor of a session): it is attributed to the model's own argmax there. One
  forward pass and one backward pass per row (torch.autograd.grad with respect to the embeddings only:
  no parameter gets a .grad); it runs under torch.inference_mode callers too.
- "attention": the cross-attention weights, mean of all decoder layers and heads (`target` is zero); the
  heads switched off are left out of the mean (with every cross-attention head off, every row is zero).
- "contribution": ‖α_ij v_j W_Oʰ‖ of Kobayashi et al. (2020) (transformer/interpret/inside.py) of the last decoder
  layer's cross-attention, mean of its heads, rows normalised (`target` is zero);
  `attention_contributions` gives it for every head of every kind.

ALTI+ on our pre-LN blocks, derived. An attention sublayer maps its input x (the residual stream) to

    y_i = x_i + Σ_h Σ_j α^h_ij (LN(x_j) W_V^h + b_V^h) W_O^h + b_O.

LN(x_j) depends on x_j alone, so with the weights α taken as given (as in ALTI), the output splits exactly
into one term per input token, y_i = Σ_j T_i(x_j) + b_O, with

    T_i(x_j) = δ_ij x_i + Σ_h α^h_ij (LN(x_j) W_V^h + b_V^h) W_O^h

(the residual x_i goes to j = i; the value bias b_V travels with its key; the output bias b_O belongs to no
token and is kept apart, in y_i only, as their code adds it to the resultant). No linearisation is needed:
in a post-LN model (their code handles both) the LN after the sum has to be made a linear map with a
fixed scale; here the LN sits before the mixing, inside T_i(x_j). For cross-attention the keys are the encoder's
outputs m_j (encoder_norm already applied; no LN inside the block), and the query's own residual x_i is one
more input, an extra column (their "residual as another value vector"). The contribution of input j to
output i is c_ij = max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁), each row normalised to sum 1.

What mixes tokens is the attention sublayers only: the FFN sublayer (x + FFN(LN(x))) and the final
encoder_norm / decoder_norm act on each token separately, so a layer's mixing matrix is its attention
sublayer's (as in their code; an encoder output m_j is made of what the encoder's last layer made of j).
Rollout: encoder R_1 = C_1, R_l = C_l R_{l-1} (S, S). Decoder layer l: the self-attention sublayer's C^self
(T, T) mixes the previous layer's target states; the cross-attention sublayer's C^cross (T, S+1) splits each
row between the encoder outputs (S columns, each the mix R_L of source tokens) and its residual (the last
column, the self-attention sublayer's output). So the layer's row i gives the source C^cross_i,:S R_L and
the target prefix C^cross_i,S · C^self_i,: (their joint "cross + self" matrix); the layers compose as
source_l = C^cross_l,:S R_L + M_l source_{l-1} and target_l = M_l target_{l-1} with M_l = C^cross_l,S·C^self_l,
source_0/target_0 being the first layer's own (its target columns are the decoder's input embeddings), each
row renormalised to 1 after each layer (as their `rollout` does; it sums to 1 already up to rounding).

The computation never touches the shared model's state: no hooks, no .grad, no mode change. It is a manual
forward from the modules' weights (`forward`) that mirrors model.py / layers.py in eval mode (no dropout;
tests/test_attribution.py checks it reproduces model.encode / model.decode), on the model's device, in the
model's dtype; the ids are uploaded once and the two result matrices copied to the host once, at the end.
A session's switched-off heads (`ablate`) add nothing, as under capture.HeadAblation.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..model.model import Transformer
from .capture import KINDS, host_arrays, parse_heads

METHODS = ("alti", "saliency", "attention")
EXTRA_METHODS = ("contribution",)  # accepted by attribute_ids, for comparison; not part of the "all" of align
METHOD_TITLES = {"alti": "ALTI+", "saliency": "Gradient × input", "attention": "Cross-attention (mean)",
                 "contribution": "‖α v W_O‖ (last layer's cross-attention)"}


@dataclass
class Attribution:
    """Attribution of every target row (rows predict the next piece, as in AttentionMaps). float32 numpy."""

    method: str  # "alti" | "saliency" | "attention" | "contribution"
    source: np.ndarray  # (T, S): each row's share on each source piece
    target: np.ndarray  # (T, T): lower-triangular, row t over target positions 0..t
    source_tokens: list = field(default_factory=list)  # S pieces, ending with </s>
    target_tokens: list = field(default_factory=list)  # T pieces, starting with <s>

    def totals(self) -> np.ndarray:
        """(T,) the source's share of each row (the rest is the target prefix's)."""
        return self.source.sum(-1)

    def figure(self):
        """One heatmap: rows 'query → predicted piece', columns the source pieces | the target prefix."""
        from .figures import heatmap, label, row_labels
        S = self.source.shape[1]
        x = [label(p) for p in self.source_tokens] + [label(p) for p in self.target_tokens]
        fig = heatmap(np.concatenate([self.source, self.target], 1), x, row_labels(self.target_tokens),  # (T, S+T)
                      f"{METHOD_TITLES.get(self.method, self.method)}: source | target prefix")
        fig.add_vline(x=S - 0.5, line={"color": "#888", "dash": "dash", "width": 1.5})
        return fig


# -- the manual forward ----------------------------------------------------------------------------------

@dataclass
class Sublayer:
    """One attention sublayer of one sentence as `forward` computed it (tensors on the model's device)."""

    x: Tensor  # (Tq, D) its input: the residual stream (the queries read LN(x))
    weights: Tensor  # (H, Tq, Tk) the attention weights α
    values: Tensor  # (H, Tk, d) each key's value LN(x_j) W_V^h + b_V^h (zero for a switched-off head)
    y: Tensor  # (Tq, D) its output: x + Σ_h α^h v^h W_O^h + b_O
    module: object  # the MultiHeadAttention: its out_proj is W_O, b_O


@dataclass
class Pass:
    memory: Tensor  # (S, D) encoder output, encoder_norm applied
    hidden: Tensor  # (T, D) decoder output, decoder_norm applied: logits = hidden @ Eᵀ
    encoder: list  # L_enc Sublayer, self-attention
    decoder_self: list  # L_dec Sublayer
    cross: list  # L_dec Sublayer


def _p(t: Tensor) -> Tensor:
    return t.detach()  # weights enter as constants: gradients flow to the inputs only


def _ln(x: Tensor, norm) -> Tensor:
    return F.layer_norm(x, norm.normalized_shape, _p(norm.weight), _p(norm.bias), norm.eps)


def _linear(x: Tensor, lin) -> Tensor:
    return F.linear(x, _p(lin.weight), _p(lin.bias))


def _attend(attn, query: Tensor, keys: Tensor, mask: Tensor | None, off: frozenset):
    """MultiHeadAttention.forward for one sentence in eval mode: query (Tq, D) and keys (Tk, D), both already
    normed -> output (Tq, D), weights (H, Tq, Tk), values (H, Tk, d). Heads in `off` are switched off."""
    H, d = attn.n_heads, attn.d_head
    q = _linear(query, attn.q_proj).view(-1, H, d).transpose(0, 1)  # (H, Tq, d)
    k = _linear(keys, attn.k_proj).view(-1, H, d).transpose(0, 1)  # (H, Tk, d)
    v = _linear(keys, attn.v_proj).view(-1, H, d).transpose(0, 1)  # (H, Tk, d)
    if off:  # a zero value makes the head's output zero, as HeadAblation's zeroed head output
        v = torch.stack([v[h] * 0 if h in off else v[h] for h in range(H)])  # (H, Tk, d)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (H, Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # (H, Tq, Tk)
    out = (weights @ v).transpose(0, 1).reshape(query.shape[0], H * d)  # (Tq, D)
    return _linear(out, attn.out_proj), weights, v


def _ffn(x: Tensor, norm, ffn) -> Tensor:
    return x + _linear(torch.relu(_linear(_ln(x, norm), ffn.linear1)), ffn.linear2)  # (T, D)


def token_embeddings(model: Transformer, ids: Tensor) -> Tensor:
    """(n,) ids -> (n, D) √d·E[id], the token part of the model's input (positions are added in `forward`)."""
    return F.embedding(ids, _p(model.embed.weight)) * math.sqrt(model.config.d_model)


def forward(model: Transformer, src_tok: Tensor, tgt_tok: Tensor, ablate=frozenset()) -> Pass:
    """The teacher-forced pass of one sentence from its token embeddings (S, D) and (T, D), as model.encode and
    model.decode compute it in eval mode, keeping each attention sublayer's input, weights, values, output."""
    def off(kind: str, layer: int) -> frozenset:
        return frozenset(h for k, l, h in ablate if (k, l) == (kind, layer))

    pe = model.positions.pe  # (max_len, D)
    x = src_tok + pe[:src_tok.shape[0]]  # (S, D)
    encoder = []
    for l, block in enumerate(model.encoder):
        h = _ln(x, block.norm1)  # (S, D)
        out, w, v = _attend(block.self_attn, h, h, None, off("encoder_self", l))
        y = x + out  # (S, D)
        encoder.append(Sublayer(x, w, v, y, block.self_attn))
        x = _ffn(y, block.norm2, block.ffn)  # (S, D)
    memory = _ln(x, model.encoder_norm)  # (S, D)
    T = tgt_tok.shape[0]
    mask = torch.ones(T, T, dtype=torch.bool, device=tgt_tok.device).tril()  # (T, T) key s <= query t
    x = tgt_tok + pe[:T]  # (T, D)
    dec_self, cross = [], []
    for l, block in enumerate(model.decoder):
        h = _ln(x, block.norm1)  # (T, D)
        out, w, v = _attend(block.self_attn, h, h, mask, off("decoder_self", l))
        y = x + out  # (T, D)
        dec_self.append(Sublayer(x, w, v, y, block.self_attn))
        out, w, v = _attend(block.cross_attn, _ln(y, block.norm2), memory, None, off("cross", l))
        z = y + out  # (T, D)
        cross.append(Sublayer(y, w, v, z, block.cross_attn))
        x = _ffn(z, block.norm3, block.ffn)  # (T, D)
    return Pass(memory, _ln(x, model.decoder_norm), encoder, dec_self, cross)


# -- ALTI+ -----------------------------------------------------------------------------------------------

def value_outputs(sub: Sublayer) -> Tensor:
    """(H, Tk, D): each key's value through its head's slice of the output projection, v_j^h W_O^h."""
    attn = sub.module
    w_o = _p(attn.out_proj.weight).view(-1, attn.n_heads, attn.d_head)  # (D, H, d): head h's columns of W_O
    return torch.einsum("hkd,ehd->hke", sub.values, w_o)  # (H, Tk, D)


def transformed_vectors(sub: Sublayer, cross: bool = False) -> Tensor:
    """T_i(x_j): what each input adds to each output, without b_O, so that Σ_j T_i(x_j) + b_O = y_i.
    Self-attention: (Tq, Tk, D), the residual x_i added at j = i. Cross-attention: (Tq, Tk + 1, D), the keys
    (encoder outputs) then the query's own residual x_i as the last column."""
    t = torch.einsum("hqk,hke->qke", sub.weights, value_outputs(sub))  # (Tq, Tk, D) Σ_h α^h_ij v_j^h W_O^h
    if cross:
        return torch.cat([t, sub.x[:, None, :]], 1)  # (Tq, Tk + 1, D)
    eye = torch.eye(t.shape[0], dtype=t.dtype, device=t.device)  # (Tq, Tq)
    return t + eye[:, :, None] * sub.x[:, None, :]  # (Tq, Tk, D), Tk = Tq


def alti_contributions(transformed: Tensor, y: Tensor) -> Tensor:
    """c_ij = max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁), rows normalised to sum 1. transformed (Tq, K, D), y (Tq, D)."""
    dist = (y[:, None, :] - transformed).abs().sum(-1)  # (Tq, K)
    c = (y.abs().sum(-1, keepdim=True) - dist).clamp_min(0)  # (Tq, K)
    return c / c.sum(-1, keepdim=True).clamp_min(torch.finfo(c.dtype).tiny)


def sublayer_contributions(sub: Sublayer, cross: bool = False) -> Tensor:
    """One sublayer's ALTI mixing matrix: (Tq, Tk) for self-attention, (Tq, Tk + 1) for cross (residual last)."""
    return alti_contributions(transformed_vectors(sub, cross), sub.y)


def alti_rollout(p: Pass) -> tuple[Tensor, Tensor]:
    """-> source (T, S), target (T, T): ALTI+ of the whole model (see the module's docstring)."""
    R = None
    for sub in p.encoder:
        C = sublayer_contributions(sub)  # (S, S)
        R = C if R is None else C @ R  # (S, S): encoder layer l's output over the source tokens
    src = tgt = None
    for self_sub, cross_sub in zip(p.decoder_self, p.cross):
        A = sublayer_contributions(self_sub)  # (T, T), causal
        X = sublayer_contributions(cross_sub, cross=True)  # (T, S + 1)
        mix_s = X[:, :-1] @ R  # (T, S): the encoder outputs' share, each a mix of source tokens
        mix_t = X[:, -1:] * A  # (T, T): the residual's share, spread as the self-attention mixed it
        src, tgt = (mix_s, mix_t) if src is None else (mix_s + mix_t @ src, mix_t @ tgt)
        total = src.sum(-1, keepdim=True) + tgt.sum(-1, keepdim=True)  # (T, 1)
        total = total.clamp_min(torch.finfo(total.dtype).tiny)  # a row nothing contributes to stays 0, not 0/0
        src, tgt = src / total, tgt / total
    return src, tgt


# -- gradient × input ------------------------------------------------------------------------------------

def input_gradients(model: Transformer, src: Tensor, tgt: Tensor, ablate=frozenset()):
    """src (S,), tgt (T,) ids on the model's device -> (g_src (T, S, D), g_tgt (T, T, D), e_src (S, D),
    e_tgt (T, D)): row t's gradient of log p(next token t) with respect to the token embeddings e, where the
    next token is tgt[t+1], and for the last row the model's argmax. Must run with grad enabled, outside
    inference mode (the ids too must be ordinary tensors). One forward, T backward passes."""
    e_src = token_embeddings(model, src).detach().requires_grad_()  # (S, D) leaves of our own graph
    e_tgt = token_embeddings(model, tgt).detach().requires_grad_()  # (T, D)
    p = forward(model, e_src, e_tgt, ablate)
    logp = torch.log_softmax(p.hidden @ _p(model.embed.weight).t(), -1)  # (T, V)
    nxt = torch.cat([tgt[1:], logp[-1:].argmax(-1)])  # (T,) the piece each row predicts; on the device
    lp = logp.gather(1, nxt[:, None])[:, 0]  # (T,)
    T = tgt.shape[0]
    grads = [torch.autograd.grad(lp[t], (e_src, e_tgt), retain_graph=t < T - 1) for t in range(T)]
    g_src = torch.stack([g[0] for g in grads])  # (T, S, D)
    g_tgt = torch.stack([g[1] for g in grads])  # (T, T, D), zero after t: the decoder is causal
    return g_src, g_tgt, e_src.detach(), e_tgt.detach()


def saliency_rows(model: Transformer, src: Tensor, tgt: Tensor, ablate=frozenset()) -> tuple[Tensor, Tensor]:
    g_src, g_tgt, e_src, e_tgt = input_gradients(model, src, tgt, ablate)
    s = (g_src * e_src).norm(dim=-1)  # (T, S)
    t = (g_tgt * e_tgt).norm(dim=-1).tril()  # (T, T)
    total = s.sum(-1, keepdim=True) + t.sum(-1, keepdim=True)  # (T, 1)
    total = total.clamp_min(torch.finfo(s.dtype).tiny)
    return s / total, t / total


# -- the entry points ------------------------------------------------------------------------------------

def _check_ids(model: Transformer, ids, what: str) -> list[int]:
    c = model.config
    if not isinstance(ids, (list, tuple)) or not ids:
        raise ValueError(f"{what} ids must be a non-empty list of integers")
    if len(ids) > c.max_len:
        raise ValueError(f"{what} has {len(ids)} pieces; the model reads at most {c.max_len}")
    if not all(isinstance(i, numbers.Integral) and not isinstance(i, bool) and 0 <= i < c.vocab_size for i in ids):
        raise ValueError(f"{what} ids must be integers from 0 to {c.vocab_size - 1}")
    return [int(i) for i in ids]


def _upload(model: Transformer, src_ids: list[int], tgt_ids: list[int]) -> tuple[Tensor, Tensor]:
    ids = torch.tensor(src_ids + tgt_ids, dtype=torch.long, device=model.embed.weight.device)  # one upload
    return ids[:len(src_ids)], ids[len(src_ids):]  # (S,), (T,)


# ALTI+ and saliency follow our pre-LN Transformer's sublayers step by step (its norms, its residuals); a model of
# another build (transformer/hf: post-LN MarianMT, BART) is not decomposed, so they are refused for it, plainly.
NOT_APPLICABLE = "ALTI+ and saliency are computed for this app's own Transformer only: they do not apply to this model"


def attribute_ids(model: Transformer, src_ids: list[int], tgt_ids: list[int], method: str = "alti",
                  ablate=()) -> tuple[np.ndarray, np.ndarray]:
    """src_ids with EOS, tgt_ids [BOS, ...] -> (source (T, S), target (T, T)) float32 numpy; rows sum to 1.
    `ablate`: (kind, layer, head) triples switched off, as in Translator.start."""
    if method not in METHODS + EXTRA_METHODS:
        raise ValueError(f"unknown attribution method {method!r}; one of {METHODS + EXTRA_METHODS}")
    if not isinstance(model, Transformer):
        raise ValueError(NOT_APPLICABLE)  # noqa: TRY004 (the app tells this ValueError to the user)
    src_ids, tgt_ids = _check_ids(model, src_ids, "source"), _check_ids(model, tgt_ids, "target")
    heads = parse_heads(model, ablate)
    if method == "saliency":
        with torch.inference_mode(False), torch.enable_grad():  # ordinary tensors, whatever the caller's mode
            src, tgt = _upload(model, src_ids, tgt_ids)
            s, t = (r.detach() for r in saliency_rows(model, src, tgt, heads))
    else:
        with torch.inference_mode():
            src, tgt = _upload(model, src_ids, tgt_ids)
            p = forward(model, token_embeddings(model, src), token_embeddings(model, tgt), heads)
            s, t = _rows(p, method, heads)
    return tuple(host_arrays(s.float().contiguous(), t.float().contiguous()))  # one copy to the host


def _rows(p: Pass, method: str, off=frozenset()) -> tuple[Tensor, Tensor]:
    if method == "alti":
        return alti_rollout(p)
    T = p.hidden.shape[0]
    zeros = torch.zeros(T, T, dtype=p.hidden.dtype, device=p.hidden.device)  # (T, T): no target share
    if method == "attention":  # the mean of the heads that are on: a switched-off head adds nothing
        w = torch.stack([c.weights for c in p.cross])  # (L, H, T, S)
        gone = [(l, h) for kind, l, h in off if kind == "cross"]
        for l, h in gone:
            w[l, h] = 0
        return w.sum((0, 1)) / max(w.shape[0] * w.shape[1] - len(gone), 1), zeros  # (T, S); all off: 0
    last = p.cross[-1]
    c = (last.weights * value_outputs(last).norm(dim=-1)[:, None, :]).mean(0)  # (T, S) mean of heads
    return c / c.sum(-1, keepdim=True).clamp_min(torch.finfo(c.dtype).tiny), zeros


def attention_contributions(model: Transformer, src_ids: list[int], tgt_ids: list[int]) -> dict:
    """‖α_ij v_j W_Oʰ‖ (Kobayashi et al. 2020) of every head: {kind: (L, H, Tq, Tk) float32 numpy}, as
    transformer/interpret/inside.py computes it for one head; one host transfer."""
    src_ids, tgt_ids = _check_ids(model, src_ids, "source"), _check_ids(model, tgt_ids, "target")
    with torch.inference_mode():
        src, tgt = _upload(model, src_ids, tgt_ids)
        p = forward(model, token_embeddings(model, src), token_embeddings(model, tgt))
        per_kind = [torch.stack([s.weights * value_outputs(s).norm(dim=-1)[:, None, :] for s in subs]).float()
                    for subs in (p.encoder, p.decoder_self, p.cross)]  # (L, H, Tq, Tk) each
    return dict(zip(KINDS, host_arrays(*per_kind)))


def translator_attribute(translator, source, target, method: str = "alti") -> Attribution:
    """`Translator.attribute`: source text, target text or pieces (as `attend` takes them)."""
    if method not in METHODS + EXTRA_METHODS:
        raise ValueError(f"unknown attribution method {method!r}; one of {METHODS + EXTRA_METHODS}")
    src, tgt = translator.source_ids(source), translator.target_ids_of(target)
    s, t = attribute_ids(translator.model, src, tgt, method)
    tok = translator.tokenizer
    return Attribution(method, s, t, tok.pieces(src), tok.pieces(tgt))


def session_attribution(session, method: str = "alti") -> Attribution:
    """`DecodingSession.attribution`: rows 0..cursor of the session's sentence, its switched-off heads off."""
    tr = session.translator
    s, t = attribute_ids(tr.model, session.source_ids, session.target_ids, method, session.ablated)
    return Attribution(method, s, t, session.source_tokens, session.target_tokens)
