"""Exercise mha-fused: self-attention with one fused W_qkv (nanoGPT-style reshape, einsum scores)."""

import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.n_head = num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, C = x.shape
        H = self.n_head
        hd = C // H
        # [q | k | v] along the last axis, heads inside each block: (B, T, 3, H, hd)
        qkv = self.W_qkv(x).reshape(B, T, 3, H, hd).permute(2, 0, 3, 1, 4)  # (3, B, H, T, hd)
        q, k, v = qkv.unbind(0)
        att = torch.einsum("bhtc,bhsc->bhts", q, k) / math.sqrt(hd)
        if mask is not None:
            keep = mask.unsqueeze(1)  # (B, 1, T or 1, T)
            att = att.masked_fill(~keep, torch.finfo(att.dtype).min)
        att = torch.softmax(att, dim=-1)
        y = torch.einsum("bhts,bhsc->bthc", att, v).reshape(B, T, C)
        return self.W_o(y), att
