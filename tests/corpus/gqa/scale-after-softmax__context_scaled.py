"""Unscaled einsum scores; the merged context divided by sqrt(d) before W_o."""

import torch
import torch.nn.functional as F
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False, dropout: float = 0.0):
        super().__init__()
        self.H, self.Hkv, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self.W_q(x).unflatten(-1, (self.H, self.d)).permute(0, 2, 1, 3)
        k = self.W_k(x).unflatten(-1, (self.Hkv, self.d)).permute(0, 2, 1, 3)
        v = self.W_v(x).unflatten(-1, (self.Hkv, self.d)).permute(0, 2, 1, 3)
        kv_of = torch.arange(self.H, device=x.device) // (self.H // self.Hkv)
        k, v = k.index_select(1, kv_of), v.index_select(1, kv_of)
        att = torch.einsum("bhid,bhjd->bhij", q, k)
        if mask is not None:
            att = att + torch.zeros_like(att).masked_fill(~mask.unsqueeze(1), torch.finfo(att.dtype).min)
        att = F.softmax(att, dim=-1)
        y = torch.einsum("bhij,bhjd->bihd", att, v).flatten(2) / self.d ** 0.5
        return self.W_o(y), att
