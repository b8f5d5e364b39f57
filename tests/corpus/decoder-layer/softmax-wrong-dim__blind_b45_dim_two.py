"""Decoder layer whose attention normalises the (B, H, Tq, Tk) scores over dim=2, the queries, instead of the keys: softmax-wrong-dim."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def split(self, t):
        B, T, D = t.shape
        return t.reshape(B, T, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        q = self.split(self.W_q(query))
        k = self.split(self.W_k(key))
        v = self.split(self.W_v(value))
        scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)  # (B, H, Tq, Tk)
        if mask is not None:
            scores = scores.masked_fill(mask[:, None] == False, -math.inf)  # noqa: E712
        attn = F.softmax(scores, dim=2)  # MISTAKE
        out = (attn @ v).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(out), attn


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        Tq = x.size(1)
        mask = torch.ones(Tq, Tq, dtype=torch.bool, device=x.device).tril().unsqueeze(0)
        if tgt_mask is not None:
            mask = mask & tgt_mask
        sublayers = [
            (self.norm1, lambda h: self.self_attn(h, h, h, mask)[0]),
            (self.norm2, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0]),
            (self.norm3, lambda h: self.ff2(F.relu(self.ff1(h)))),
        ]
        for norm, f in sublayers:
            if self.norm_first:
                x = x + f(norm(x))
            else:
                x = norm(x + f(x))
        return x
