"""Grouped 5-D scores (B, Hkv, g, T, T) but the mask only gets one new axis (mask[:, None]), so batch lines up with the kv heads."""
import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.H, self.G = num_heads, num_kv_heads
        d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        d = D // self.H
        g = self.H // self.G
        q = self.W_q(x).view(B, T, self.G, g, d).permute(0, 2, 3, 1, 4)     # (B, Hkv, g, T, d)
        k = self.W_k(x).view(B, T, self.G, d).permute(0, 2, 1, 3)
        v = self.W_v(x).view(B, T, self.G, d).permute(0, 2, 1, 3)
        s = torch.einsum("bkgtd,bksd->bkgts", q, k) / math.sqrt(d)
        if mask is not None:
            s = s.masked_fill(~mask[:, None], float("-inf"))
        p = torch.softmax(s, dim=-1)
        o = torch.einsum("bkgts,bksd->btkgd", p, v).reshape(B, T, D)
        return self.W_o(o), p.reshape(B, self.H, T, T)
