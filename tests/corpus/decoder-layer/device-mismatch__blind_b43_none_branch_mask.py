"""Decoder layer that, only when tgt_mask is None, makes an all-True key mask with torch.ones on the CPU and combines it with the device causal mask."""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        assert d_model % num_heads == 0
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.d_head).transpose(1, 2)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        q = self._split(self.W_q(query))
        k = self._split(self.W_k(key))
        v = self._split(self.W_v(value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        w = torch.softmax(scores, dim=-1)
        out = (w @ v).transpose(1, 2).reshape(B, Tq, self.d_model)
        return self.W_o(out), w


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

    def _ff(self, x):
        return self.ff2(torch.relu(self.ff1(x)))

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        Tq = x.shape[1]
        causal = torch.ones(Tq, Tq, dtype=torch.bool, device=x.device).tril()[None]  # (1, Tq, Tq)
        if tgt_mask is None:
            tgt_mask = torch.ones(1, 1, Tq, dtype=torch.bool)  # CPU, only on this branch
        self_mask = causal & tgt_mask
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, self_mask)[0]
            x = x + self.cross_attn(self.norm2(x), memory, memory, memory_mask)[0]
            x = x + self._ff(self.norm3(x))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, self_mask)[0])
            x = self.norm2(x + self.cross_attn(x, memory, memory, memory_mask)[0])
            x = self.norm3(x + self._ff(x))
        return x
