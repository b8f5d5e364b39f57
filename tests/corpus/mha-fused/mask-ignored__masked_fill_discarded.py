"""Calls scores.masked_fill(...) and drops the result (masked_fill is not in place)."""

import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.n_heads = num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        d = D // self.n_heads
        q, k, v = self.W_qkv(x).split(D, dim=-1)
        q = q.reshape(B, T, self.n_heads, d).transpose(1, 2)
        k = k.reshape(B, T, self.n_heads, d).transpose(1, 2)
        v = v.reshape(B, T, self.n_heads, d).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(d)
        if mask is not None:
            scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        y = torch.matmul(weights, v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), weights
