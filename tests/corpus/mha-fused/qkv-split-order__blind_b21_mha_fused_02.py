"""Exercise mha-fused: self-attention with one fused W_qkv."""

import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H, hd = self.num_heads, self.head_dim
        qkv = self.W_qkv(x)  # (B, T, 3D)
        q, k, v = qkv.view(B, T, H, 3 * hd).chunk(3, dim=-1)  # MISTAKE
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, H, T, hd)
        scores = q @ k.transpose(-2, -1) * (hd ** -0.5)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        probs = torch.softmax(scores, dim=-1)
        out = (probs @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(out), probs
