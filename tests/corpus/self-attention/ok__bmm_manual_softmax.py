"""torch.bmm with an explicit transpose, a hand-written stable softmax (max subtracted, exp, sum)."""

import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def forward(self, x, mask=None):
        q = self.W_q(x)  # (B, T, dk)
        k = self.W_k(x)  # (B, T, dk)
        v = self.W_v(x)  # (B, T, dv)
        s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])  # (B, T, T)
        if mask is not None:
            s = s.masked_fill(mask.logical_not(), torch.finfo(s.dtype).min)
        e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
        w = e / e.sum(dim=-1, keepdim=True)
        return torch.bmm(w, v), w
