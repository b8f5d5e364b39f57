"""Correct: PyTorch-style _sa_block/_ff_block helpers, einsum attention."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.h = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        q = self.W_q(query).unflatten(-1, (self.h, -1))
        k = self.W_k(key).unflatten(-1, (self.h, -1))
        v = self.W_v(value).unflatten(-1, (self.h, -1))
        logits = torch.einsum("bqhd,bkhd->bhqk", q, k) / q.shape[-1] ** 0.5
        if mask is not None:
            logits = logits.masked_fill(~mask[:, None], torch.finfo(logits.dtype).min)
        w = logits.softmax(dim=-1)
        ctx = torch.einsum("bhqk,bkhd->bqhd", w, v).flatten(-2)
        return self.W_o(ctx), w


class EncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def _sa_block(self, x, mask):
        out, _ = self.self_attn(x, x, x, mask=mask)
        return out

    def _ff_block(self, x):
        return self.ff2(torch.relu(self.ff1(x)))

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), mask)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, mask))
            x = self.norm2(x + self._ff_block(x))
        return x
