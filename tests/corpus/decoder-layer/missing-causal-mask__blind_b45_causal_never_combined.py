"""Decoder layer that builds a causal mask but hands self-attention only tgt_mask: missing-causal-mask."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        dk = D // self.h
        q = self.W_q(query).view(B, Tq, self.h, dk).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, self.h, dk).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, self.h, dk).transpose(1, 2)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / dk ** 0.5
        if mask is not None:
            mask = mask.unsqueeze(1)
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        w = torch.softmax(scores, dim=-1)
        y = torch.einsum("bhqk,bhkd->bqhd", w, v).reshape(B, Tq, D)
        return self.W_o(y), w


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
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
        T = x.size(1)
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        self_mask = tgt_mask  # MISTAKE
        if self.norm_first:
            y = self.norm1(x)
            x = x + self.self_attn(y, y, y, self_mask)[0]
            y = self.norm2(x)
            x = x + self.cross_attn(y, memory, memory, memory_mask)[0]
            y = self.norm3(x)
            x = x + self.ff2(torch.relu(self.ff1(y)))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, self_mask)[0])
            x = self.norm2(x + self.cross_attn(x, memory, memory, memory_mask)[0])
            x = self.norm3(x + self.ff2(torch.relu(self.ff1(x))))
        return x
