"""Mistake: divides the scores by sqrt(dv) (the value width) instead of sqrt(dk)."""
import math
import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, dim, dk, dv, bias=True):
        super().__init__()
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def forward(self, x, mask=None):
        q = self.W_q(x)
        k = self.W_k(x)
        v = self.W_v(x)
        d = v.size(-1)
        scores = q.matmul(k.transpose(1, 2)) / math.sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        w = scores.softmax(dim=-1)
        return w.matmul(v), w
