"""Multi-head attention with a permute-based merge: (B, H, Tq, d) is permuted so that the sequence axis
comes second and then flattened. Mistake: permute(0, 2, 3, 1) leaves the features in (d, H) order, so
feature j*H + h of the merged tensor holds feature j of head h: the heads are interleaved instead of
being put back at [h*d, (h+1)*d) before W_o (right only when H == 1)."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H = self.num_heads
        d = D // H
        q = self.W_q(query).reshape(B, Tq, H, d).permute(0, 2, 1, 3)
        k = self.W_k(key).reshape(B, Tk, H, d).permute(0, 2, 1, 3)
        v = self.W_v(value).reshape(B, Tk, H, d).permute(0, 2, 1, 3)
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d)
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
        p = torch.softmax(s, dim=-1)
        o = torch.einsum("bhqk,bhkd->bhqd", p, v)
        merged = o.permute(0, 2, 3, 1).reshape(B, Tq, D)  # MISTAKE
        return self.W_o(merged), p
