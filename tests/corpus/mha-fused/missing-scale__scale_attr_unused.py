"""Computes self.scale in __init__ and never multiplies the scores by it."""

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.hd = d_model // num_heads
        self.scale = self.hd ** -0.5
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = self.W_qkv(x).view(b, t, 3, self.h, self.hd).permute(2, 0, 3, 1, 4).unbind(0)
        s = torch.einsum("bhid,bhjd->bhij", q, k)
        if mask is not None:
            s = torch.where(mask[:, None], s, torch.finfo(s.dtype).min)
        p = s.softmax(-1)
        o = (p @ v).permute(0, 2, 1, 3).reshape(b, t, dm)
        return self.W_o(o), p
