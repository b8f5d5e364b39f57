"""Grouped-query attention without materialising repeated keys: the query heads are viewed as
(Hkv, G) groups (query head h = kv * G + g) and einsum contracts each group against its own kv head;
the scores are then flattened back to (B, H, T, T). Correct (unusual style: grouped einsum, no repeat)."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.H, self.Hkv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        G = self.H // self.Hkv
        q = self.W_q(x).view(B, T, self.Hkv, G, self.hd)
        k = self.W_k(x).view(B, T, self.Hkv, self.hd)
        v = self.W_v(x).view(B, T, self.Hkv, self.hd)
        s = torch.einsum("btkgd,bskd->bkgts", q, k) / math.sqrt(self.hd)
        if mask is not None:
            s = s.masked_fill(~mask[:, None, None], float("-inf"))
        p = torch.softmax(s, dim=-1)
        y = torch.einsum("bkgts,bskd->btkgd", p, v).reshape(B, T, D)
        return self.W_o(y), p.reshape(B, self.H, T, T)
