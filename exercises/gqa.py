"""Exercise gqa: grouped-query self-attention, LLaMA-style (target: 6 minutes).

Write the module below.

    __init__(d_model, num_heads, num_kv_heads, bias=False)
        d = d_model // num_heads, the head dim
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)
        (exactly these names: the checker copies the reference's weights into them)

    forward(x, mask=None) -> (out, weights)
        x         (B, T, D)            self-attention: x gives the queries, the keys and the values
        mask      None, or bool (B, T, T) or (B, 1, T). True means "may attend".
                  It has no head axis: making it broadcast over the heads is part of the exercise.
        out       (B, T, D)
        weights   (B, H, T, T), the post-softmax probabilities of every query head

    H = num_heads query heads share Hkv = num_kv_heads key/value heads: query head h reads kv head
    h // (H // Hkv), so consecutive query heads share one kv head. Hkv == 1 is multi-query attention,
    Hkv == H plain multi-head attention. Head h of a projection is its features [h*d, (h+1)*d); the
    merge puts query head h back at those features before W_o. Scores are divided by sqrt(d).
    Keep the input's dtype and device. No dropout.
    Not allowed: nn.MultiheadAttention, F.scaled_dot_product_attention.

Check it with:  attn-drill check
"""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        # TODO: the four projections (W_k and W_v are narrower)
        raise NotImplementedError("write GroupedQueryAttention.__init__")

    def forward(self, x, mask=None):
        # TODO: project, split heads, share each kv head with its group of query heads, attend, merge, project out
        raise NotImplementedError("write GroupedQueryAttention.forward")
