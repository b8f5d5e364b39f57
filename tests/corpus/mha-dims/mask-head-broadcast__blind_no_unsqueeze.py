"""Mistake: uses the (B, Tq, Tk) mask directly on (B, H, Tq, Tk) scores, without adding a head axis."""
import math
import torch
import torch.nn as nn


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
        Tk = key.shape[1]
        q = self.W_q(query).view(B, Tq, self.h, self.dk).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, self.h, self.dk).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, self.h, self.dv).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, Tq, self.h * self.dv)
        return self.W_o(out), weights
