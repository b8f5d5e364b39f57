"""Query heads are flattened to (B*H) for torch.bmm and the (B, T, T) mask is tiled with mask.repeat(H, 1, 1) instead of per-sequence, so heads get other sequences' masks."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H, Hkv, hd = self.num_heads, self.num_kv_heads, self.head_dim

        q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
        k = self.W_k(x).view(B, T, Hkv, hd).transpose(1, 2)
        v = self.W_v(x).view(B, T, Hkv, hd).transpose(1, 2)
        k = k.repeat_interleave(H // Hkv, dim=1)
        v = v.repeat_interleave(H // Hkv, dim=1)

        qf = q.reshape(B * H, T, hd)
        kf = k.reshape(B * H, T, hd)
        vf = v.reshape(B * H, T, hd)
        att = torch.bmm(qf, kf.transpose(1, 2)) * (1.0 / math.sqrt(hd))
        if mask is not None:
            att = att.masked_fill(mask.repeat(H, 1, 1).logical_not(), float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = torch.bmm(att, vf).view(B, H, T, hd)
        y = y.transpose(1, 2).contiguous().view(B, T, D)
        return self.W_o(y), att.view(B, H, T, T)
