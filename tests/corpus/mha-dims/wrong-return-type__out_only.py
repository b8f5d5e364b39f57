"""Returns the output alone, not the pair (out, weights)."""

import math

import torch
from torch import nn


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim, num_heads, dk, dv, bias=True):
        super().__init__()
        self.h, self.dk, self.dv = num_heads, dk, dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.size(1)
        H, dk, dv = self.h, self.dk, self.dv
        q = self.W_q(query).view(B, Tq, H, dk).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, H, dk).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, H, dv).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(dk)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        y = weights @ v
        y = y.transpose(1, 2).reshape(B, Tq, H * dv)
        return self.W_o(y)
