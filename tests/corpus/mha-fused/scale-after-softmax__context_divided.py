"""Raw scores into the softmax; the per-head context divided by sqrt(d) before W_o."""

import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True, dropout: float = 0.0):
        super().__init__()
        assert d_model % num_heads == 0
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H, d = self.num_heads, self.head_dim
        q, k, v = (t.reshape(B, T, H, d) for t in self.W_qkv(x).chunk(3, dim=-1))
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k)
        if mask is not None:
            scores = torch.where(mask.unsqueeze(1), scores, torch.finfo(scores.dtype).min)
        weights = self.dropout(scores.softmax(dim=-1))
        y = torch.einsum("bhqk,bkhd->bqhd", weights, v).reshape(B, T, D) / math.sqrt(d)
        return self.W_o(y), weights
