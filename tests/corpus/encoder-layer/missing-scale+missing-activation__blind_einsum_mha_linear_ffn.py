"""The MultiHeadAttention never divides the scores by sqrt(d), and the feed-forward applies ff1 then ff2 with no ReLU in between."""

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.h = num_heads
        self.dh = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).reshape(B, Tq, self.h, self.dh)
        k = self.W_k(key).reshape(B, Tk, self.h, self.dh)
        v = self.W_v(value).reshape(B, Tk, self.h, self.dh)
        logits = torch.einsum("bqhd,bkhd->bhqk", q, k)
        if mask is not None:
            logits = logits.masked_fill(~mask[:, None, :, :], torch.finfo(logits.dtype).min)
        w = logits.softmax(dim=-1)
        out = torch.einsum("bhqk,bkhd->bqhd", w, v).reshape(B, Tq, D)
        return self.W_o(out), w


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def _sa(self, x, mask):
        out, _ = self.self_attn(x, x, x, mask=mask)
        return out

    def _ff(self, x):
        hidden = self.ff1(x)
        return self.ff2(hidden)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self._sa(self.norm1(x), mask)
            x = x + self._ff(self.norm2(x))
            return x
        x = self.norm1(x + self._sa(x, mask))
        x = self.norm2(x + self._ff(x))
        return x
