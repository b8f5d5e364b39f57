"""Multi-head attention with per-head widths that reads the scaling width off the projected queries
before they are split into heads. Mistake: q.shape[-1] is then num_heads * dk, not dk, so the scores
are divided by sqrt(H * dk)."""

import math

import torch
from torch import nn


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim: int, num_heads: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.h, self.dk, self.dv = num_heads, dk, dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.size(1)
        q = self.W_q(query)
        k = self.W_k(key)
        v = self.W_v(value)
        scale = 1.0 / math.sqrt(q.shape[-1])  # MISTAKE
        q = q.view(B, Tq, self.h, self.dk).transpose(1, 2)
        k = k.view(B, Tk, self.h, self.dk).transpose(1, 2)
        v = v.view(B, Tk, self.h, self.dv).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * scale
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(B, Tq, self.h * self.dv)
        return self.W_o(y), attn
