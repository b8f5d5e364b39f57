"""Applies W_o's column block of each head to that head and sums: the same computation as merging first."""

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
        H, dk, dv = self.h, self.dk, self.dv
        q = self.W_q(query).reshape(B, Tq, H, dk).permute(0, 2, 1, 3)  # (B, H, Tq, dk)
        k = self.W_k(key).reshape(B, -1, H, dk).permute(0, 2, 1, 3)  # (B, H, Tk, dk)
        v = self.W_v(value).reshape(B, -1, H, dv).permute(0, 2, 1, 3)  # (B, H, Tk, dv)
        scores = q @ k.transpose(-2, -1) / math.sqrt(dk)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        y = weights @ v  # (B, H, Tq, dv)
        w_o = self.W_o.weight.view(-1, H, dv)  # (dim, H, dv): head h's columns [h*dv, (h+1)*dv)
        out = torch.einsum("bhqe,che->bqc", y, w_o)
        if self.W_o.bias is not None:
            out = out + self.W_o.bias
        return out, weights
