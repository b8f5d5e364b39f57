"""Zeroes the caller's query after projecting it ("to free memory"): in self-attention that wipes key and value too."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.num_heads = num_heads
        for name in ("W_q", "W_k", "W_v", "W_o"):
            setattr(self, name, nn.Linear(d_model, d_model, bias=bias))

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        H, d = self.num_heads, D // self.num_heads
        q = self.W_q(query).view(B, Tq, H, d).transpose(1, 2)
        with torch.no_grad():
            query.zero_()  # "free memory": the caller's tensor is wiped
        k = self.W_k(key).view(B, -1, H, d).transpose(1, 2)
        v = self.W_v(value).view(B, -1, H, d).transpose(1, 2)
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d)
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), torch.finfo(s.dtype).min)
        w = s.softmax(-1)
        return self.W_o((w @ v).transpose(1, 2).reshape(B, Tq, D)), w
