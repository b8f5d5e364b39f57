"""Exercise decoder-layer: causal self-attention, cross-attention, feed-forward."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _heads(self, t):
        B, T, _ = t.shape
        return t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        q, k, v = self._heads(self.W_q(query)), self._heads(self.W_k(key)), self._heads(self.W_v(value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(out), weights


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
        T = x.shape[1]
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device)).unsqueeze(0)
        self_mask = tgt_mask if tgt_mask is not None else causal  # MISTAKE
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, self_mask)[0]
            h = self.norm2(x)
            x = x + self.cross_attn(h, memory, memory, memory_mask)[0]
            x = x + self.ff2(torch.relu(self.ff1(self.norm3(x))))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, self_mask)[0])
            x = self.norm2(x + self.cross_attn(x, memory, memory, memory_mask)[0])
            x = self.norm3(x + self.ff2(torch.relu(self.ff1(x))))
        return x
