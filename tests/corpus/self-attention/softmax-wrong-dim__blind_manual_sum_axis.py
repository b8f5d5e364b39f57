"""Mistake: hand-rolled softmax takes the max and the sum over axis -2 instead of -1."""
import math
import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, dim, dk, dv, bias=True):
        super().__init__()
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    @staticmethod
    def normalise(s):
        s = s - s.max(dim=-2, keepdim=True).values
        e = s.exp()
        return e / e.sum(dim=-2, keepdim=True)

    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        s = q @ k.mT / math.sqrt(q.shape[-1])
        if mask is not None:
            s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        a = self.normalise(s)
        return a @ v, a
