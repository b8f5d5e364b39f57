"""Zeroes the hidden keys with torch.where(mask, p, 0) after the softmax; rows no longer sum to 1."""

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        b, tq, dm = query.shape
        tk = key.shape[1]
        q = self.W_q(query).reshape(b, tq, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.W_k(key).reshape(b, tk, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        v = self.W_v(value).reshape(b, tk, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        p = F.softmax(torch.einsum("bhqd,bhkd->bhqk", q, k) * self.head_dim**-0.5, dim=-1)
        if mask is not None:
            p = torch.where(mask[:, None], p, 0.0)
        ctx = torch.einsum("bhqk,bhkd->bhqd", p, v).permute(0, 2, 1, 3).reshape(b, tq, dm)
        return self.W_o(ctx), p
