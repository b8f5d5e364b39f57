"""Loops over heads and copies each into a torch.zeros(...) weights buffer made without device=: on a GPU the weights come back on the CPU."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H = self.num_heads
        d = D // H
        q, k, v = self.W_q(query), self.W_k(key), self.W_v(value)
        weights = torch.zeros(B, H, Tq, Tk, dtype=query.dtype)
        heads = []
        for h in range(H):
            cols = slice(h * d, (h + 1) * d)
            s = q[..., cols] @ k[..., cols].transpose(1, 2) / math.sqrt(d)  # (B, Tq, Tk)
            if mask is not None:
                s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
            w = torch.softmax(s, dim=-1)
            weights[:, h] = w
            heads.append(w @ v[..., cols])
        return self.W_o(torch.cat(heads, dim=-1)), weights
