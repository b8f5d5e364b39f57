"""Known mistakes of the LLaMA block (RMSNorm, SwiGLU, pre-norm, RoPE, GQA), as executable variants.

`block` computes the model answer from a case's float64 weights with default knobs (tests/test_reference_llama_block
proves it); each knob reproduces one real mistake. The attention's own mistakes are variants.attention's Knobs
(scale, softmax axis, kv repeat, the RoPE family), read here as they are read for gqa and rope.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attn_drill.judge.probes import rope as rope_fit
from attn_drill.judge.variants.attention import RIGHT, Knobs, repeat_kv, scale_of


@dataclass(frozen=True)
class LlamaKnobs:
    norm: str = "ok"  # ok | mean (LayerNorm's centring) | var (x / sqrt(var + eps): the variance for the mean square)
    #                   | eps_outside (x / (rms + eps)) | no_eps
    gate: str = "ok"  # ok: silu(w1 x) * w3 x | swapped (silu on w3) | relu | gelu | gelu_tanh | sigmoid | none
    residual: str = "both"  # both | no_attn (h = attn(...)) | no_ffn (out = ffn(...))
    placement: str = "pre"  # pre | post (h = norm(x + attn(x)); out = norm(h + ffn(h)))
    causal: str = "ok"  # ok (j <= i) | none | no-diagonal (j < i) | one-future (j <= i + 1)
    fill: str = "-inf"  # what hidden scores get: -inf (a row with none visible: NaN) | min (finfo.min: uniform)
    attn: Knobs = RIGHT  # scale, softmax_dim, kv_repeat, rope_* (rope_fit.rotate reads them)


RIGHT_BLOCK = LlamaKnobs()

GATES = {"ok": F.silu, "swapped": F.silu, "relu": F.relu, "gelu": F.gelu, "sigmoid": torch.sigmoid,
         "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "none": lambda t: t}


def rms_norm(x, weight, eps: float, how: str = "ok"):
    if how == "mean":
        x = x - x.mean(-1, keepdim=True)  # LayerNorm's centring: RMSNorm has none
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
    if how == "var":  # the variance in place of the mean square: the denominator centred, the numerator not
        return x / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + eps) * weight
    ms = x.pow(2).mean(-1, keepdim=True)
    if how == "eps_outside":
        return x / (ms.sqrt() + eps) * weight
    if how == "no_eps":
        return x * torch.rsqrt(ms) * weight
    return x * torch.rsqrt(ms + eps) * weight


def swiglu(params: dict, x, how: str = "ok", prefix: str = "ffn."):
    def lin(name, t):
        return F.linear(t, params[f"{prefix}{name}.weight"])
    gate, up = lin("w1", x), lin("w3", x)
    if how == "swapped":
        gate, up = up, gate
    return lin("w2", GATES[how](gate) * up)


def attention(params: dict, x, positions, H: int, Hkv: int, base: float, knobs: LlamaKnobs):
    B, T, D = x.shape
    d = D // H
    q = F.linear(x, params["W_q.weight"]).view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
    k = F.linear(x, params["W_k.weight"]).view(B, T, Hkv, d).transpose(1, 2)  # (B, Hkv, T, d)
    v = F.linear(x, params["W_v.weight"]).view(B, T, Hkv, d).transpose(1, 2)
    q = rope_fit.rotate(q, positions, base, knobs.attn)
    k = rope_fit.rotate(k, positions, base, knobs.attn)
    k, v = (repeat_kv(t, H // Hkv, knobs.attn.kv_repeat) for t in (k, v))  # (B, H, T, d)
    scores = q @ k.transpose(-2, -1) * scale_of(knobs.attn, q)  # (B, H, T, T)
    if knobs.causal != "none":
        shift = {"ok": 0, "no-diagonal": -1, "one-future": 1}[knobs.causal]
        seen = torch.ones(T, T, dtype=torch.bool).tril(diagonal=shift)
        scores = scores.masked_fill(~seen, float("-inf") if knobs.fill == "-inf" else torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=knobs.attn.softmax_dim)  # a row with no visible key: NaN, or uniform
    y = (weights @ v).transpose(1, 2).reshape(B, T, D)
    return F.linear(y, params["W_o.weight"])


def block(params: dict, x, positions, config: dict, knobs: LlamaKnobs = RIGHT_BLOCK):
    """The block's output (B, T, D) in float64, with one mistake per knob."""
    H, Hkv, base, eps = config["num_heads"], config["num_kv_heads"], config["rope_base"], config["eps"]

    def norm(name, t):
        return rms_norm(t, params[f"{name}.weight"], eps, knobs.norm)

    def attn(t):
        return attention(params, t, positions, H, Hkv, base, knobs)

    def ffn(t):
        return swiglu(params, t, knobs.gate)

    if knobs.placement == "post":
        h = norm("attn_norm", x + attn(x))
        return norm("ffn_norm", h + ffn(h))
    h = attn(norm("attn_norm", x)) + (0 if knobs.residual == "no_attn" else x)
    return ffn(norm("ffn_norm", h)) + (0 if knobs.residual == "no_ffn" else h)

