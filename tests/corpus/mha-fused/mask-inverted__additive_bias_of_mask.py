"""Builds an additive bias mask * finfo.min: it penalises the allowed keys, not the hidden ones."""

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
        q, k, v = (z.reshape(b, t, self.h, hd).permute(0, 2, 1, 3) for z in self.W_qkv(x).chunk(3, -1))
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) * hd ** -0.5
        if mask is not None:
            s = s + mask[:, None].to(s.dtype) * torch.finfo(s.dtype).min
        p = s.softmax(-1)
        o = torch.einsum("bhqk,bhkd->bhqd", p, v).permute(0, 2, 1, 3).reshape(b, t, dm)
        return self.W_o(o), p
