"""Scales the scores by 1/sqrt(d_model) instead of 1/sqrt(head_dim)."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        hd = self.d_model // self.num_heads
        q = self.W_q(query).reshape(B, Tq, self.num_heads, hd).permute(0, 2, 1, 3)
        k = self.W_k(key).reshape(B, Tk, self.num_heads, hd).permute(0, 2, 3, 1)      # (B, H, d, Tk)
        v = self.W_v(value).reshape(B, Tk, self.num_heads, hd).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k) / math.sqrt(self.d_model)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        w = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(w, v).permute(0, 2, 1, 3).reshape(B, Tq, self.d_model)
        return self.W_o(ctx), w
