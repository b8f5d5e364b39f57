"""Exercise kv-cache: causal self-attention with grouped kv heads, RoPE and a KV cache (target: 8 minutes).

Write the module below: the attention layer of a LLaMA-style decoder, as it runs while generating.

    __init__(d_model, num_heads, num_kv_heads, rope_base=10000.0)
        self.W_q: nn.Linear(D, D)                 self.W_k, self.W_v: nn.Linear(D, Hkv * d)
        self.W_o: nn.Linear(D, D)                 all with bias=False
        (exactly these names: the checker copies the reference's weights into them)

    forward(x, cache=None) -> (out, (k_all, v_all))
        x        (B, T_new, D): the new tokens only
        cache    None (nothing seen yet), or (k, v) as a previous call returned them,
                 each (B, Hkv, T_past, d); the cached keys are already rotated
        out      (B, T_new, D)
        k_all, v_all  (B, Hkv, T_past + T_new, d): the cache with the new tokens appended

    H = num_heads, Hkv = num_kv_heads, d = D // H.
    Heads: head h uses features [h*d, (h+1)*d) of W_q's output, kv head g features [g*d, (g+1)*d) of
      W_k's and W_v's; query head h reads kv head h // (H // Hkv). The cache keeps Hkv heads, not H.
    Positions: the new tokens are T_past, ..., T_past + T_new - 1.
    RoPE on q and k (not v), half-split pairs: for i in [0, d/2), theta = position * rope_base ** (-2i/d),
        out[i]       = x[i] * cos(theta) - x[i + d/2] * sin(theta)
        out[i + d/2] = x[i + d/2] * cos(theta) + x[i] * sin(theta)
    Causal over all T_past + T_new keys: new token i (position T_past + i) sees keys j <= T_past + i.
    Scores are divided by sqrt(d). Keep the input's dtype and device. No dropout.
    Feeding a sequence at once, token by token or in chunks must give the same outputs.
    Not allowed: F.scaled_dot_product_attention, nn.MultiheadAttention.

Check it with:  attn-drill check
"""

import math

import torch
from torch import nn


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        # TODO: the four projections (no bias), and what forward needs to remember
        raise NotImplementedError("write CachedSelfAttention.__init__")

    def forward(self, x, cache=None):
        # TODO: project, split heads, rotate q and k at their positions, append to the cache,
        #       repeat kv heads, causal attention over every key, merge heads, project out
        raise NotImplementedError("write CachedSelfAttention.forward")
