"""Exercise gqa: grouped-query attention without materialising repeated kv heads."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.H, self.Hkv = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H, Hkv, d = self.H, self.Hkv, self.d
        g = H // Hkv
        # query head h = kv * g + j, so (H, d) -> (Hkv, g, d) keeps the contract's mapping h // g
        q = self.W_q(x).view(B, T, Hkv, g, d).permute(0, 2, 3, 1, 4)  # (B, Hkv, g, T, d)
        k = self.W_k(x).view(B, T, Hkv, d).permute(0, 2, 1, 3)  # (B, Hkv, T, d)
        v = self.W_v(x).view(B, T, Hkv, d).permute(0, 2, 1, 3)
        s = torch.einsum("bkgtd,bksd->bkgts", q, k) / math.sqrt(d)
        if mask is not None:
            s = s.masked_fill(~mask[:, None, None], torch.finfo(s.dtype).min)
        p = torch.softmax(s, dim=-1)  # (B, Hkv, g, T, T)
        y = torch.einsum("bkgts,bksd->btkgd", p, v).reshape(B, T, D)
        return self.W_o(y), p.reshape(B, H, T, T)
