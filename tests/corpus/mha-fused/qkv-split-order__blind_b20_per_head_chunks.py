"""Fused self-attention that views W_qkv's output per head first, (B, T, H, 3*d), and cuts each head's
3*d features into its q, k and v with split(d). Mistake: that is the per-head interleaved layout of
GPT-NeoX / BLOOM ((H, 3, d)); the contract's W_qkv output is [q | k | v] each D wide ((3, H, d)), so
the heads get the wrong features for q, k and v (right only when H == 1)."""

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
        qkv = self.W_qkv(x).view(B, T, H, 3 * hd).transpose(1, 2)  # MISTAKE
        q, k, v = qkv.split(hd, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(out), weights
