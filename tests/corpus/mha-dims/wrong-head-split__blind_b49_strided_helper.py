import math

import torch
from torch import nn


def split_heads(t, n_heads, width):
    """(B, L, n_heads * width) -> (B, n_heads, L, width)"""
    B, L, _ = t.shape
    return t.view(B, L, width, n_heads).permute(0, 3, 1, 2)  # MISTAKE: head h gets features h, h+H, ... not a contiguous block


def merge_heads(t):
    """(B, n_heads, L, width) -> (B, L, n_heads * width)"""
    B, n_heads, L, width = t.shape
    return t.permute(0, 2, 1, 3).reshape(B, L, n_heads * width)


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim: int, num_heads: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.H, self.dk, self.dv = num_heads, dk, dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        qh = split_heads(self.W_q(query), self.H, self.dk)
        kh = split_heads(self.W_k(key), self.H, self.dk)
        vh = split_heads(self.W_v(value), self.H, self.dv)
        sim = torch.einsum("bhqd,bhkd->bhqk", qh, kh) / math.sqrt(self.dk)
        if mask is not None:
            sim = sim.masked_fill(~mask.unsqueeze(1), float("-inf"))
        w = sim.softmax(dim=-1)
        ctx = torch.einsum("bhqk,bhkd->bhqd", w, vh)
        return self.W_o(merge_heads(ctx)), w
