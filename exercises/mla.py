"""Exercise mla: DeepSeek-V2/V3 multi-head latent attention, with its cache (target: 12 minutes).

Write two classes below (the checker may also call RMSNorm on its own, with another eps).

RMSNorm:
    __init__(dim, eps=1e-6)            self.weight = nn.Parameter(torch.ones(dim))
    forward(x) -> x * rsqrt(mean(x ** 2 over the last dim) + eps) * weight, same shape and dtype as x
MultiHeadLatentAttention:
    __init__(d_model, num_heads, kv_rank, d_nope, d_rope, d_v, rope_base=10000.0)
        self.W_q:    nn.Linear(d_model, num_heads * (d_nope + d_rope))   head h's slice: [q_nope | q_pe]
        self.W_kv_a: nn.Linear(d_model, kv_rank + d_rope)                [c_kv | k_pe]
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b: nn.Linear(kv_rank, num_heads * (d_nope + d_v))      head h's slice: [k_nope | v]
        self.W_o:    nn.Linear(num_heads * d_v, d_model)                 all with bias=False
        (exactly these names: the checker copies the reference's weights into them)
    forward(x, cache=None) -> (out, (c_kv_all, k_pe_all))
        x       (B, T_new, D): the new tokens only, at positions T_past .. T_past + T_new - 1
        cache   None, or (c_kv (B, T_past, kv_rank), k_pe (B, T_past, d_rope)) as a previous call returned it:
                the latents AFTER kv_norm and the rope keys AFTER RoPE
        out     (B, T_new, D); the cache returned with the new tokens appended along time
    Head h: q = [q_nope | q_pe] from W_q; k = [k_nope_h | k_pe], v_h from W_kv_b(kv_norm(c_kv)).
      k_pe has no head axis: one rope key a token, shared by every head.
    RoPE only on q_pe and k_pe, half-split pairs (i, i + d_rope/2), angle position * rope_base ** (-2i/d_rope).
    score_h = (q_nope_h . k_nope_h + q_pe_h . k_pe) / sqrt(d_nope + d_rope)
    Causal over every cached and new key: new token i (position T_past + i) sees keys j <= T_past + i.
    Rebuilding per-head keys and values (naive) and folding W_kv_b into q and the output (absorbed) both pass.
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


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        # TODO: W_q, W_kv_a, kv_norm, W_kv_b, W_o
        raise NotImplementedError("write MultiHeadLatentAttention.__init__")

    def forward(self, x, cache=None):
        # TODO: q and the latent; RoPE on the pe parts; append to the cache; rebuild k and v; causal attention; W_o
        raise NotImplementedError("write MultiHeadLatentAttention.forward")
