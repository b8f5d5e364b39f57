"""Runs the attention core in float64 "for accuracy", casts back before W_o, but returns float64 weights."""

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__()
        self.h, self.hkv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        g = self.h // self.hkv
        q = self.W_q(x).view(b, t, self.hkv, g, self.hd).double()
        k = self.W_k(x).view(b, t, self.hkv, self.hd).double()
        v = self.W_v(x).view(b, t, self.hkv, self.hd).double()
        s = torch.einsum("bqjrd,bkjd->bjrqk", q, k) * self.hd ** -0.5
        if mask is not None:
            s = s.masked_fill(~mask[:, None, None], torch.finfo(s.dtype).min)
        p = s.softmax(dim=-1)
        o = torch.einsum("bjrqk,bkjd->bqjrd", p, v).reshape(b, t, dm)
        return self.W_o(o.to(x.dtype)), p.reshape(b, self.h, t, t)
