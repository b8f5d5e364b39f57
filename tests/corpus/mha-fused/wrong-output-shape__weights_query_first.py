"""Returns the weights as (B, T, H, T), heads after the queries, to match the (B, T, ...) output layout."""

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
        q, k, v = self.W_qkv(x).view(b, t, 3, self.h, hd).unbind(2)  # each (b, t, h, hd)
        s = torch.einsum("bqhd,bkhd->bqhk", q, k) / hd ** 0.5
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(2), torch.finfo(s.dtype).min)
        p = s.softmax(-1)
        o = torch.einsum("bqhk,bkhd->bqhd", p, v).reshape(b, t, dm)
        return self.W_o(o), p
