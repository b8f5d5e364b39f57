"""Mistake: scales the scores by 1/sqrt(dv), the value head width, instead of 1/sqrt(dk)."""
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
        self.scale = 1.0 / math.sqrt(dv)

    def _heads(self, t, width):
        B, T, _ = t.shape
        return t.reshape(B, T, self.h, width).permute(0, 2, 1, 3)

    def forward(self, query, key, value, mask=None):
        q = self._heads(self.W_q(query), self.dk)
        k = self._heads(self.W_k(key), self.dk)
        v = self._heads(self.W_v(value), self.dv)
        att = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        if mask is not None:
            att = att.masked_fill(mask.unsqueeze(1) == 0, float("-inf"))
        att = torch.softmax(att, dim=-1)
        o = torch.matmul(att, v).permute(0, 2, 1, 3).flatten(2)
        return self.W_o(o), att
