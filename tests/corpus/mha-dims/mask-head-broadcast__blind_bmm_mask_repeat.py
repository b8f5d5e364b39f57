"""Heads are flattened to (B*H) for torch.bmm, but the mask is tiled with mask.repeat(H, 1, 1), so batch b*H+h gets the mask of sequence (b*H+h) % B."""

import math

import torch
from torch import nn


class MultiHeadAttentionDims(nn.Module):
    """Multi-head attention whose per-head widths are given: dk for queries and keys, dv for values."""

    def __init__(self, dim: int, num_heads: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.dk = dk
        self.dv = dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        H = self.num_heads

        def fold(t, T, w):
            # (B, T, H*w) -> (B*H, T, w)
            return t.view(B, T, H, w).transpose(1, 2).reshape(B * H, T, w)

        q = fold(self.W_q(query), Tq, self.dk)
        k = fold(self.W_k(key), Tk, self.dk)
        v = fold(self.W_v(value), Tk, self.dv)

        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.dk)  # (B*H, Tq, Tk)
        if mask is not None:
            m = mask.repeat(H, 1, 1)  # (B*H, Tq or 1, Tk)
            scores = scores.masked_fill(~m, torch.finfo(scores.dtype).min)
        attn = torch.softmax(scores, dim=-1)
        out = torch.bmm(attn, v)  # (B*H, Tq, dv)
        out = out.view(B, H, Tq, self.dv).transpose(1, 2).reshape(B, Tq, H * self.dv)
        return self.W_o(out), attn.view(B, H, Tq, Tk)
