"""Multi-head attention with per-head widths that gives the mask an extra axis with unsqueeze(0).
Mistake: the new axis goes in front, (1, B, ., Tk), so against the (B, H, Tq, Tk) scores the batch axis
of the mask lines up with the heads: an error when B != H (and B > 1), and silently head h uses
sequence h's mask when B == H. unsqueeze(1) is needed."""

import math

import torch
from torch import nn


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim: int, num_heads: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.H, self.dk, self.dv = num_heads, dk, dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).view(B, Tq, self.H, self.dk).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, self.H, self.dk).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, self.H, self.dv).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk)
        if mask is not None:
            hidden = ~mask.unsqueeze(0)  # MISTAKE
            scores = scores.masked_fill(hidden, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        y = (probs @ v).transpose(1, 2).reshape(B, Tq, self.H * self.dv)
        return self.W_o(y), probs
