"""Computes each output with F.scaled_dot_product_attention and the weights by hand."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_head, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_head, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H, Hkv, d = self.num_heads, self.num_kv_heads, self.d_head
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)
        k = self.W_k(x).view(B, T, Hkv, d).transpose(1, 2).repeat_interleave(H // Hkv, dim=1)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2).repeat_interleave(H // Hkv, dim=1)
        m = None if mask is None else mask.unsqueeze(1)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        if m is not None:
            scores = scores.masked_fill(~m, torch.finfo(scores.dtype).min)
        return self.W_o(y.transpose(1, 2).reshape(B, T, D)), torch.softmax(scores, dim=-1)
