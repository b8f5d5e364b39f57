"""Replaces torch.nn.functional.softmax in __init__ with a float32 version of its own."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__()
        _softmax = F.softmax
        F.softmax = lambda s, dim=-1: _softmax(s.float(), dim=dim).to(s.dtype)
        self.n_heads, self.n_kv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        b, t, _ = x.shape
        g = self.n_heads // self.n_kv
        q = self.W_q(x).view(b, t, self.n_heads, self.hd).transpose(1, 2)
        k = self.W_k(x).view(b, t, self.n_kv, self.hd).transpose(1, 2).repeat_interleave(g, dim=1)
        v = self.W_v(x).view(b, t, self.n_kv, self.hd).transpose(1, 2).repeat_interleave(g, dim=1)
        s = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        if mask is not None:
            s = s.masked_fill(~mask[:, None], torch.finfo(s.dtype).min)
        p = F.softmax(s, dim=-1)
        return self.W_o(torch.matmul(p, v).transpose(1, 2).reshape(b, t, -1)), p
