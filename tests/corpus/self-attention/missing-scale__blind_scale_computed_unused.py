"""Mistake: self.scale is computed in __init__ but the scores are never multiplied by it."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, dim, dk, dv, bias=True):
        super().__init__()
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)
        self.scale = 1 / math.sqrt(dk)

    def attend(self, q, k, v, mask):
        s = torch.matmul(q, k.transpose(-1, -2))
        if mask is not None:
            s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        p = F.softmax(s, dim=-1)
        return torch.matmul(p, v), p

    def forward(self, x, mask=None):
        return self.attend(self.W_q(x), self.W_k(x), self.W_v(x), mask)
