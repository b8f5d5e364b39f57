"""Exercise llama-block: a LLaMA-style Transformer block (target: 10 minutes).

Write three classes below (the checker may also call RMSNorm and SwiGLU on their own).

RMSNorm:
    __init__(dim, eps=1e-6)            self.weight = nn.Parameter(torch.ones(dim))
    forward(x) -> x * rsqrt(mean(x ** 2 over the last dim) + eps) * weight, same shape and dtype as x
        (no mean subtracted, no bias; computing in float32 for half inputs, then casting back, is fine)
SwiGLU:
    __init__(dim, hidden)              self.w1 (gate), self.w3 (up): nn.Linear(dim, hidden, bias=False)
                                       self.w2 (down): nn.Linear(hidden, dim, bias=False)
    forward(x) -> w2(silu(w1(x)) * w3(x))
LlamaBlock:
    __init__(d_model, num_heads, num_kv_heads, d_ff, rope_base=10000.0, eps=1e-6)
        self.attn_norm, self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q, self.W_o: nn.Linear(d_model, d_model, bias=False)
        self.W_k, self.W_v: nn.Linear(d_model, num_kv_heads * d, bias=False), d = d_model // num_heads
        self.ffn = SwiGLU(d_model, d_ff)
        (exactly these names: the checker copies the reference's weights into them)
    forward(x, positions=None) -> (B, T, D)
        x (B, T, D); positions int64 (T,) or (B, T), 0 .. T-1 when None
        pre-norm:  h = x + attn(attn_norm(x));  out = h + ffn(ffn_norm(h))
        attn: causal self-attention by index (token i sees j <= i, whatever positions hold);
              RoPE on q and k at `positions`, half-split pairs (i, i + d/2), angle position * base ** (-2i/d);
              query head h reads kv head h // (num_heads // num_kv_heads); scores divided by sqrt(d);
              heads merged back and W_o applied.
    Keep the input's dtype and device. No dropout.
    Not allowed: torch.nn.RMSNorm, F.rms_norm (any built-in RMS norm), nn.Transformer*,
    F.scaled_dot_product_attention.

Check it with:  attn-drill check
"""

import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        # TODO: eps and a weight of ones
        raise NotImplementedError("write RMSNorm.__init__")

    def forward(self, x):
        # TODO: divide by the root mean square over the last dim, then scale by weight
        raise NotImplementedError("write RMSNorm.forward")


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        # TODO: w1, w2, w3
        raise NotImplementedError("write SwiGLU.__init__")

    def forward(self, x):
        # TODO: gate, up, down
        raise NotImplementedError("write SwiGLU.forward")


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        # TODO: attn_norm, ffn_norm, W_q, W_k, W_v, W_o, ffn
        raise NotImplementedError("write LlamaBlock.__init__")

    def forward(self, x, positions=None):
        # TODO: pre-norm attention (RoPE, GQA, causal) with its residual, then the SwiGLU with its residual
        raise NotImplementedError("write LlamaBlock.forward")
