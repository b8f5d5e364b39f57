"""Builds the additive bias with masked_fill(mask, -inf): -inf lands on the keys the mask allows."""
import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.h, self.kvh = num_heads, num_kv_heads
        self.dh = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.dh, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.dh, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self.W_q(x).reshape(B, T, self.h, self.dh).permute(0, 2, 1, 3)
        k = self.W_k(x).reshape(B, T, self.kvh, self.dh).permute(0, 2, 1, 3)
        v = self.W_v(x).reshape(B, T, self.kvh, self.dh).permute(0, 2, 1, 3)
        k = torch.repeat_interleave(k, self.h // self.kvh, dim=1)
        v = torch.repeat_interleave(v, self.h // self.kvh, dim=1)
        attn_bias = torch.zeros(B, 1, T, T, dtype=q.dtype, device=q.device)
        if mask is not None:
            attn_bias = attn_bias.masked_fill(mask.unsqueeze(1), float("-inf"))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.dh) + attn_bias
        p = torch.softmax(s, dim=-1)
        out = (p @ v).permute(0, 2, 1, 3).reshape(B, T, D)
        return self.W_o(out), p
