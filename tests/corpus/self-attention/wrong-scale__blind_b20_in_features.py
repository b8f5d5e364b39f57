"""Single-head self-attention that precomputes its scale in __init__ from the projection layer.
Mistake: it reads W_q.in_features (the input width dim) instead of W_q.out_features (dk), so scores are
divided by sqrt(dim)."""

import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)
        self.inv_sqrt = 1.0 / math.sqrt(self.W_q.in_features)  # MISTAKE

    def forward(self, x, mask=None):
        q = self.W_q(x)
        k = self.W_k(x)
        v = self.W_v(x)
        att = torch.einsum("bid,bjd->bij", q, k) * self.inv_sqrt
        if mask is not None:
            att = att.masked_fill(~mask, float("-inf"))
        att = att.softmax(dim=-1)
        return torch.einsum("bij,bjd->bid", att, v), att
