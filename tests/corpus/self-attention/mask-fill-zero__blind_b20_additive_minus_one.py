"""Single-head self-attention with an additive mask made from the boolean one as mask.float() - 1
(0 where visible, -1 where hidden). Mistake: -1 is a modest penalty, not -inf, so hidden keys keep a
sizeable probability instead of exactly zero."""

import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.dk = dk
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(self.dk)
        if mask is not None:
            scores = scores + (mask.to(scores.dtype) - 1.0)  # MISTAKE
        p = torch.softmax(scores, dim=-1)
        return torch.matmul(p, v), p
