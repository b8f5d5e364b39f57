"""Multi-head attention written with unflatten and einsum: projections are unflattened to
(B, T, H, d) and never transposed, scores come from 'bqhd,bkhd->bhqk', the mask gets its head axis
with mask[:, None], and the heads are merged by einsum back to (B, Tq, H, d) and flattened.
Correct (unusual style: einsum layouts instead of transpose/reshape)."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.h = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        q = self.W_q(query).unflatten(-1, (self.h, -1))
        k = self.W_k(key).unflatten(-1, (self.h, -1))
        v = self.W_v(value).unflatten(-1, (self.h, -1))
        logits = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])
        if mask is not None:
            logits = logits.masked_fill(~mask[:, None], float("-inf"))
        attn = logits.softmax(dim=-1)
        ctx = torch.einsum("bhqk,bkhd->bqhd", attn, v).flatten(-2)
        return self.W_o(ctx), attn
