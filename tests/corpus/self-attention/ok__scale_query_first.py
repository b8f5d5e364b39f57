"""Scales q before the dot product (the same numbers), an additive -inf bias and nan_to_num for empty rows."""

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim, dk, dv, bias=True, dropout=0.0):
        super().__init__()
        self.dk = dk
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        q = self.W_q(x) * self.dk ** -0.5
        k = self.W_k(x)
        v = self.W_v(x)
        scores = torch.matmul(q, k.mT)
        if mask is not None:
            bias = torch.zeros_like(scores).masked_fill(~mask, float("-inf"))
            scores = scores + bias
        attn = scores.softmax(dim=-1).nan_to_num(0.0)
        return self.drop(attn) @ v, attn
