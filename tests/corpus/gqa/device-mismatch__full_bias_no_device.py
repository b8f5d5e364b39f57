"""Builds the additive mask bias with torch.full(mask.shape, min, dtype=...) and no device=."""

import torch
import torch.nn.functional as F
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__()
        self.H, self.Hkv, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        q = self.W_q(x).unflatten(-1, (self.H, self.d)).transpose(1, 2)
        k = self.W_k(x).unflatten(-1, (self.Hkv, self.d)).transpose(1, 2)
        v = self.W_v(x).unflatten(-1, (self.Hkv, self.d)).transpose(1, 2)
        k = k.repeat_interleave(self.H // self.Hkv, dim=1)
        v = v.repeat_interleave(self.H // self.Hkv, dim=1)
        att = q @ k.transpose(-1, -2) / self.d ** 0.5
        if mask is not None:
            bias = torch.full(mask.shape, torch.finfo(att.dtype).min, dtype=att.dtype)
            att = att + bias.masked_fill(mask, 0.0).unsqueeze(1)
        att = F.softmax(att, dim=-1)
        return self.W_o((att @ v).transpose(1, 2).flatten(2)), att
