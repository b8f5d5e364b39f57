"""Loops over query heads and gives head h the kv head h % num_kv_heads (the tiled order)."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        d = self.head_dim
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        d = self.head_dim
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        outs, probs = [], []
        for h in range(self.num_heads):
            j = h % self.num_kv_heads
            s = q[..., h * d:(h + 1) * d] @ k[..., j * d:(j + 1) * d].transpose(1, 2) / math.sqrt(d)
            if mask is not None:
                s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
            p = torch.softmax(s, dim=-1)
            outs.append(p @ v[..., j * d:(j + 1) * d])
            probs.append(p)
        return self.W_o(torch.cat(outs, dim=-1)), torch.stack(probs, dim=1)
