"""Exercise mha-dims: per-head widths dk and dv."""

import math

import torch
from torch import nn


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim: int, num_heads: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.h, self.dk, self.dv = num_heads, dk, dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).view(B, Tq, self.h, self.dk)
        k = self.W_k(key).view(B, Tk, self.h, self.dk)
        v = self.W_v(value).view(B, Tk, self.h, self.dv)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.dk)
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, :, :], torch.finfo(scores.dtype).min)
        attn = torch.softmax(scores, dim=-1)
        out = torch.einsum("bhqk,bkhv->bqvh", attn, v).reshape(B, Tq, -1)  # MISTAKE
        return self.W_o(out), attn
