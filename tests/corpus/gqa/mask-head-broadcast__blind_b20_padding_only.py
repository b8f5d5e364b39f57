"""Grouped-query attention that adds a head axis to the mask only for the key-padding form (B, 1, T),
the one the candidate tested with. Mistake: a full (B, T, T) mask is used without a head axis, so it is
broadcast against (B, H, T, T) with B lined up with H: an error when B != H, and silently head h gets
sequence h's mask when B == H."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
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
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        if mask is not None:
            if mask.shape[1] == 1:  # key padding mask (B, 1, T) -> (B, 1, 1, T)
                mask = mask.unsqueeze(1)
            scores = scores.masked_fill(~mask, float("-inf"))  # MISTAKE
        weights = torch.softmax(scores, dim=-1)
        y = (weights @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), weights
