"""Merges with permute(0, 2, 3, 1): (B, T, d, H) flattened, so the heads' features interleave."""

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h, self.hd = num_heads, d_model // num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = self.W_qkv(x).view(b, t, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
        s = q @ k.transpose(-2, -1) * self.hd ** -0.5
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), torch.finfo(s.dtype).min)
        p = s.softmax(-1)
        o = (p @ v).permute(0, 2, 3, 1).reshape(b, t, dm)
        return self.W_o(o), p
