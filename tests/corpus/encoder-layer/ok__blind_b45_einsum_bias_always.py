"""Encoder layer (post-LN / pre-LN) with an einsum multi-head attention whose projections always carry a bias: correct."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.dk = d_model // num_heads
        # the layer always uses the default, so just keep the bias
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).view(B, Tq, self.h, self.dk)
        k = self.W_k(key).view(B, Tk, self.h, self.dk)
        v = self.W_v(value).view(B, Tk, self.h, self.dk)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.dk)
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None], float("-inf"))
        attn = F.softmax(scores, dim=-1)
        ctx = torch.einsum("bhqk,bkhd->bqhd", attn, v).reshape(B, Tq, -1)
        return self.W_o(ctx), attn


class EncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
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
        return self.ff2(F.relu(self.ff1(x)))

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self._sa(self.norm1(x), mask)
            x = x + self._ff(self.norm2(x))
            return x
        x = self.norm1(x + self._sa(x, mask))
        return self.norm2(x + self._ff(x))
