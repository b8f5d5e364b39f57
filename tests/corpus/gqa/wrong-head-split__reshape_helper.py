"""A split helper that reshapes (B, T, n*d) straight to (B, n, T, d): time steps leak into heads."""

import torch
import torch.nn.functional as F
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.H, self.Hkv, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def heads(self, z, n):
        b, t, _ = z.shape
        return z.reshape(b, n, t, self.d)

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q = self.heads(self.W_q(x), self.H)
        k = self.heads(self.W_k(x), self.Hkv).repeat_interleave(self.H // self.Hkv, dim=1)
        v = self.heads(self.W_v(x), self.Hkv).repeat_interleave(self.H // self.Hkv, dim=1)
        att = torch.einsum("bhid,bhjd->bhij", q, k) / self.d ** 0.5
        if mask is not None:
            att = att.masked_fill(~mask.unsqueeze(1), torch.finfo(att.dtype).min)
        att = F.softmax(att, dim=-1)
        y = torch.einsum("bhij,bhjd->bihd", att, v).reshape(b, t, dm)
        return self.W_o(y), att
