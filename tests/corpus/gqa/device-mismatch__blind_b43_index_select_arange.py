"""Grouped-query attention that maps query heads to kv heads with index_select on a torch.arange index made on the CPU, never moved to the inputs' device."""
import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        assert d_model % num_heads == 0 and num_heads % num_kv_heads == 0
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_head, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_head, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, _ = x.shape
        H, Hkv, d = self.num_heads, self.num_kv_heads, self.d_head
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)
        k = self.W_k(x).view(B, T, Hkv, d).transpose(1, 2)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)
        kv_of_head = torch.arange(H) // (H // Hkv)  # CPU index, never moved
        k = k.index_select(1, kv_of_head)
        v = v.index_select(1, kv_of_head)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        w = torch.softmax(scores, dim=-1)
        out = (w @ v).transpose(1, 2).reshape(B, T, self.d_model)
        return self.W_o(out), w
