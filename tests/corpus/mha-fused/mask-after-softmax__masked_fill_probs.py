"""Zeroes the hidden keys' probabilities with masked_fill after the softmax."""

import torch
import torch.nn.functional as F
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        hd = dm // self.h
        q, k, v = self.W_qkv(x).view(b, t, 3, self.h, hd).permute(2, 0, 3, 1, 4)
        p = F.softmax(q @ k.transpose(-1, -2) * hd ** -0.5, dim=-1)
        if mask is not None:
            p = p.masked_fill(~mask[:, None], 0.0)
        o = (p @ v).transpose(1, 2).reshape(b, t, dm)
        return self.W_o(o), p
