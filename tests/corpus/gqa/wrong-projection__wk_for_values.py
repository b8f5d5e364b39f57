"""The narrow values projected by W_k, not W_v."""

import math

import torch
import torch.nn.functional as F
from torch import nn


def repeat_kv(hidden, n_rep):
    b, hkv, t, hd = hidden.shape
    if n_rep == 1:
        return hidden
    hidden = hidden[:, :, None, :, :].expand(b, hkv, n_rep, t, hd)
    return hidden.reshape(b, hkv * n_rep, t, hd)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__()
        self.n_heads, self.n_kv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.W_q = nn.Linear(d_model, num_heads * self.hd, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_o = nn.Linear(num_heads * self.hd, d_model, bias=bias)

    def forward(self, x, mask=None):
        b, t, _ = x.shape
        q = self.W_q(x).view(b, t, self.n_heads, self.hd).transpose(1, 2)
        k = self.W_k(x).view(b, t, self.n_kv, self.hd).transpose(1, 2)
        v = self.W_k(x).view(b, t, self.n_kv, self.hd).transpose(1, 2)
        g = self.n_heads // self.n_kv
        k, v = repeat_kv(k, g), repeat_kv(v, g)
        s = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        if mask is not None:
            s = s.masked_fill(~mask[:, None], float("-inf"))
        p = F.softmax(s, dim=-1)
        if mask is not None:
            p = p.masked_fill(~mask[:, None].any(-1, keepdim=True), 0.0)
        o = torch.matmul(p, v).transpose(1, 2).reshape(b, t, -1)
        return self.W_o(o), p
