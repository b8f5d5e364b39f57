"""Mistake: calls the out-of-place masked_fill and throws the result away."""
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

    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = q @ k.transpose(1, 2)
        scores = scores / math.sqrt(k.shape[-1])
        if mask is not None:
            scores.masked_fill(~mask, float("-inf"))
        p = F.softmax(scores, dim=-1)
        return p @ v, p
