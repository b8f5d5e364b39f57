"""Views the fused output as (B, T, H, d, 3) and takes [..., 0], [..., 1], [..., 2] as q, k, v.
step: head split
"""
import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.H = num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        d = D // self.H
        qkv = self.W_qkv(x).view(B, T, self.H, d, 3).permute(4, 0, 2, 1, 3)   # (3, B, H, T, d)
        q, k, v = qkv[0], qkv[1], qkv[2]
        s = q @ k.transpose(-2, -1) / math.sqrt(d)
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
        a = torch.softmax(s, -1)
        o = (a @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(o), a
