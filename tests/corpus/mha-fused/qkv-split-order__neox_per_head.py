"""GPT-NeoX style: views W_qkv's output as (B, T, H, 3d) and splits each head's slice into q, k, v."""

import torch
import torch.nn.functional as F
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.hd = d_model // num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        qkv = self.W_qkv(x).view(b, t, self.h, 3 * self.hd).transpose(1, 2)  # (b, h, t, 3hd)
        q, k, v = qkv.split(self.hd, dim=-1)
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) * self.hd ** -0.5
        if mask is not None:
            s = s.masked_fill(~mask[:, None], torch.finfo(s.dtype).min)
        p = F.softmax(s, dim=-1)
        o = torch.einsum("bhqk,bhkd->bhqd", p, v).transpose(1, 2).reshape(b, t, dm)
        return self.W_o(o), p
