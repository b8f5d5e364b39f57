"""Merges the heads in reverse order (torch.cat(heads[::-1])), so head h lands at features of head H-1-h.
"""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.H = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        d = query.shape[-1] // self.H
        qs = self.W_q(query).split(d, dim=-1)
        ks = self.W_k(key).split(d, dim=-1)
        vs = self.W_v(value).split(d, dim=-1)
        heads, ws = [], []
        for q, k, v in zip(qs, ks, vs):
            s = q @ k.transpose(-2, -1) / math.sqrt(d)
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            w = s.softmax(-1)
            ws.append(w)
            heads.insert(0, w @ v)
        return self.W_o(torch.cat(heads, -1)), torch.stack(ws, 1)
