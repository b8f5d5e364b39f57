"""A split_heads helper that reshapes (B, T, D) to (B, H, T, d) directly."""

import torch
import torch.nn.functional as F
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, z):
        b, t, dm = z.shape
        return z.reshape(b, self.h, t, dm // self.h)

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = map(self.split_heads, self.W_qkv(x).chunk(3, dim=-1))
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / (dm // self.h) ** 0.5
        if mask is not None:
            s = s.masked_fill(~mask[:, None], torch.finfo(s.dtype).min)
        p = F.softmax(s, dim=-1)
        o = torch.einsum("bhqk,bhkd->bhqd", p, v).permute(0, 2, 1, 3).reshape(b, t, dm)
        return self.W_o(o), p
