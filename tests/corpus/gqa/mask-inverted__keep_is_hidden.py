"""torch.where(mask, min, scores): the allowed keys get the fill, the hidden ones keep their scores."""

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
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
        q = self.W_q(x).view(b, t, self.hkv, g, self.hd)
        k = self.W_k(x).view(b, t, self.hkv, self.hd)
        v = self.W_v(x).view(b, t, self.hkv, self.hd)
        s = torch.einsum("bqjrd,bkjd->bjrqk", q, k) / self.hd ** 0.5
        if mask is not None:
            s = torch.where(mask[:, None, None], torch.finfo(s.dtype).min, s)
        p = s.softmax(dim=-1)
        o = torch.einsum("bjrqk,bkjd->bqjrd", p, v).reshape(b, t, dm)
        return self.W_o(o), p.reshape(b, self.h, t, t)
