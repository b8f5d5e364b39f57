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

    def _causal(self, x, tgt_mask):
        T = x.size(1)
        i = torch.arange(T, device=x.device)
        m = (i[None, :] <= i[:, None]).unsqueeze(0)  # (1, T, T)
        return m if tgt_mask is None else m & tgt_mask

    def _self(self, h, tgt_mask):
        return self.self_attn(h, h, h, mask=self._causal(h, tgt_mask))[0]

    def _cross(self, h, memory, memory_mask):
        return self.cross_attn(query=memory, key=h, value=h, mask=memory_mask)[0]  # MISTAKE

    def _ff(self, h):
        return self.ff2(torch.relu(self.ff1(h)))

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self._self(self.norm1(x), tgt_mask)
            x = x + self._cross(self.norm2(x), memory, memory_mask)
            x = x + self._ff(self.norm3(x))
        else:
            x = self.norm1(x + self._self(x, tgt_mask))
            x = self.norm2(x + self._cross(x, memory, memory_mask))
            x = self.norm3(x + self._ff(x))
        return x
