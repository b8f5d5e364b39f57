"""Mistake (in self_attn): attention logits are not divided by sqrt(d_head)."""
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
        logits = torch.einsum("bqhd,bkhd->bhqk", q, k)
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

    def _residual(self, x, norm, fn):
        # one sub-layer with its residual, in either placement
        if self.norm_first:
            return x + fn(norm(x))
        return norm(x + fn(x))

    def forward(self, x, mask=None):
        x = self._residual(x, self.norm1, lambda t: self.self_attn(t, t, t, mask)[0])
        x = self._residual(x, self.norm2, lambda t: self.ff2(F.relu(self.ff1(t))))
        return x
