"""Grouped-query attention that scales the queries into a new variable before the dot product.
Mistake: the scores are then computed from the unscaled q, so the 1/sqrt(d) never reaches them."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.h, self.kvh = num_heads, num_kv_heads
        self.dh = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.dh, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.dh, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self.W_q(x).view(B, T, self.h, self.dh).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.kvh, self.dh).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.kvh, self.dh).transpose(1, 2)
        n_rep = self.h // self.kvh
        k = k.repeat_interleave(n_rep, dim=1)
        v = v.repeat_interleave(n_rep, dim=1)
        q_scaled = q * (1.0 / math.sqrt(self.dh))
        scores = torch.einsum("bhid,bhjd->bhij", q, k)  # MISTAKE
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        y = torch.einsum("bhij,bhjd->bhid", attn, v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), attn
