"""Mistake: splits heads with view(B, H, T, d) straight from (B, T, H*d), no transpose."""
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
        q = self.W_q(query).view(B, self.h, Tq, self.dk)
        k = self.W_k(key).view(B, self.h, Tk, self.dk)
        v = self.W_v(value).view(B, self.h, Tk, self.dv)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.dk)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        p = torch.softmax(scores, dim=-1)
        out = torch.einsum("bhqk,bhke->bhqe", p, v)
        out = out.transpose(1, 2).reshape(B, Tq, self.h * self.dv)
        return self.W_o(out), p
