"""Fused self-attention that unflattens W_qkv's output to (B, T, 3, H, d) and permutes it to
(3, B, H, T, d) in one go, then unbinds q, k, v; the mask is broadcast with unsqueeze(-3) and the
merge is permute + flatten. Correct (unusual style: one unflatten/permute/unbind for all three)."""

import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.nh = num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        hd = D // self.nh
        q, k, v = self.W_qkv(x).unflatten(-1, (3, self.nh, hd)).permute(2, 0, 3, 1, 4).unbind(0)
        a = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
        if mask is not None:
            a = a.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        a = torch.softmax(a, dim=-1)
        y = (a @ v).permute(0, 2, 1, 3).flatten(2)
        return self.W_o(y), a
