"""Single-head self-attention that builds the score matrix key-major, k @ q^T (row j = key j), masks it
with the transposed mask, and transposes the probabilities back before the weighted sum. Mistake: the
softmax over the last axis of the key-major matrix normalises over the queries, not over the keys, so
after transposing back each column (not each row) sums to 1."""

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
        kq = k @ q.transpose(-2, -1) / math.sqrt(self.dk)  # (B, Tk, Tq)
        if mask is not None:
            kq = kq.masked_fill(~mask.transpose(-2, -1), float("-inf"))
        probs_kq = torch.softmax(kq, dim=-1)  # MISTAKE
        weights = probs_kq.transpose(-2, -1)
        return weights @ v, weights
