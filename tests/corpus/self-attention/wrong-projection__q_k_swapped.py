"""Mistake: unpacks the projections in the wrong order, so queries come from W_k and keys from W_q."""
import math
import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, dim, dk, dv, bias=True):
        super().__init__()
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def project(self, x):
        return self.W_k(x), self.W_q(x), self.W_v(x)

    def forward(self, x, mask=None):
        q, k, v = self.project(x)
        s = torch.einsum("bqc,bkc->bqk", q, k) / math.sqrt(q.size(-1))
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        p = torch.softmax(s, dim=-1)
        return torch.einsum("bqk,bkc->bqc", p, v), p
