"""Self-attention is given only tgt_mask (no causal mask, so later tokens are visible), and the cross-attention output replaces x instead of being added."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        assert d_model % num_heads == 0
        self.H = num_heads
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _heads(self, t):
        b, n, _ = t.shape
        return t.reshape(b, n, self.H, self.d).transpose(1, 2)

    def forward(self, query, key, value, mask=None):
        b, tq, D = query.shape
        q, k, v = self._heads(self.W_q(query)), self._heads(self.W_k(key)), self._heads(self.W_v(value))
        att = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(self.d)
        if mask is not None:
            att = att.masked_fill(mask[:, None].logical_not(), float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = torch.einsum("bhij,bhjd->bhid", att, v)
        y = y.transpose(1, 2).reshape(b, tq, D)
        return self.W_o(y), att


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

    def _ffn(self, x):
        return self.ff2(torch.relu(self.ff1(x)))

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        if self.norm_first:
            n = self.norm1(x)
            x = x + self.self_attn(n, n, n, tgt_mask)[0]
            n = self.norm2(x)
            x = self.cross_attn(n, memory, memory, memory_mask)[0]
            x = x + self._ffn(self.norm3(x))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, tgt_mask)[0])
            x = self.norm2(self.cross_attn(x, memory, memory, memory_mask)[0])
            x = self.norm3(x + self._ffn(x))
        return x
