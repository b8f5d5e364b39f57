"""Before merging, the head axis is rotated by one (torch.roll), so head h lands at the features of head h+1 before W_o."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.n_head = num_heads
        self.n_kv = num_kv_heads
        self.hd = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        rep = self.n_head // self.n_kv
        q = self.W_q(x).view(B, T, self.n_kv, rep, self.hd)           # query head = g * rep + r
        k = self.W_k(x).view(B, T, self.n_kv, self.hd)
        v = self.W_v(x).view(B, T, self.n_kv, self.hd)

        s = torch.einsum("btgrd,bsgd->bgrts", q, k) / math.sqrt(self.hd)
        s = s.reshape(B, self.n_head, T, T)
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
        w = torch.softmax(s, dim=-1)
        o = torch.einsum("bgrts,bsgd->bgrtd", w.view(B, self.n_kv, rep, T, T), v)
        o = o.reshape(B, self.n_head, T, self.hd)
        o = torch.roll(o, shifts=1, dims=1)
        o = o.permute(0, 2, 1, 3).reshape(B, T, D)
        return self.W_o(o), w
