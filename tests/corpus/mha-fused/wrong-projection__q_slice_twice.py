"""Slices the query block of the fused output twice: k takes qkv[..., :D] (W_q's part) instead of qkv[..., D:2D]."""
import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _split(self, t):
        B, T, _ = t.shape
        return t.view(B, T, self.num_heads, -1).transpose(1, 2)

    def forward(self, x, mask=None):
        D = self.d_model
        qkv = self.W_qkv(x)
        q = self._split(qkv[..., :D])
        k = self._split(qkv[..., :D])
        v = self._split(qkv[..., 2 * D:])
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
        if mask is not None:
            att = att.masked_fill(mask.unsqueeze(1).logical_not(), float("-inf"))
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(x.shape)
        return self.W_o(y), att
