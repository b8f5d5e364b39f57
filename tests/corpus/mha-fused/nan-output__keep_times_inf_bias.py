"""Masks by arithmetic, s * keep + (1 - keep) * -inf: for every kept key that is 0 * -inf = NaN."""

import torch
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
        q, k, v = (z.reshape(b, t, self.h, hd).transpose(1, 2) for z in self.W_qkv(x).split(dm, -1))
        s = q @ k.transpose(-2, -1) / hd ** 0.5
        if mask is not None:
            keep = mask[:, None].to(s.dtype)
            s = s * keep + (1.0 - keep) * float("-inf")
        p = torch.softmax(s, dim=-1)
        return self.W_o((p @ v).transpose(1, 2).reshape(b, t, dm)), p
