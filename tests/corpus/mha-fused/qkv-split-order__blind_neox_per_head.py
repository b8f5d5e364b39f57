"""Splits the fused output per head as (B, T, H, 3, d), GPT-NeoX style, instead of [q | k | v] each D wide."""
import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.head_size = d_model // num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        qkv = self.W_qkv(x).view(B, T, self.num_heads, 3 * self.head_size)
        qkv = qkv.permute(0, 2, 1, 3)                                    # (B, H, T, 3d)
        q, k, v = qkv.split(self.head_size, dim=-1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_size)
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None], torch.finfo(scores.dtype).min)
        probs = scores.softmax(dim=-1)
        ctx = (probs @ v).permute(0, 2, 1, 3).reshape(B, T, D)
        return self.W_o(ctx), probs
