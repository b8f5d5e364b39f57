"""Fused self-attention that reads the head width off the fused layer: out_features // num_heads.
Mistake: W_qkv's out_features is 3 * D, so that "head width" is 3*d and the scores are divided by
sqrt(3*d) instead of sqrt(d). The split itself uses the right d."""

import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)
        self.scale = (self.W_qkv.out_features // num_heads) ** -0.5  # MISTAKE

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H = self.num_heads
        q, k, v = self.W_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(B, T, H, D // H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * self.scale
        if mask is not None:
            att = att.masked_fill(~mask.unsqueeze(1), float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), att
