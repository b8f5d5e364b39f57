"""Decoder layer with a view/permute attention and a causal mask built from a negated triu, one method per sub-layer: correct."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        assert d_model % num_heads == 0
        self.n_head = num_heads
        self.d_k = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.size()
        Tk = key.size(1)
        q = self.W_q(query).view(B, Tq, self.n_head, self.d_k).permute(0, 2, 1, 3)
        k = self.W_k(key).view(B, Tk, self.n_head, self.d_k).permute(0, 2, 1, 3)
        v = self.W_v(value).view(B, Tk, self.n_head, self.d_k).permute(0, 2, 1, 3)
        att = torch.matmul(q, k.permute(0, 1, 3, 2)) / math.sqrt(self.d_k)
        if mask is not None:
            att = att.masked_fill(~mask.unsqueeze(1), float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v).permute(0, 2, 1, 3).contiguous().view(B, Tq, D)
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

    def _causal(self, x, tgt_mask):
        T = x.size(1)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        m = (~future).unsqueeze(0)  # (1, T, T)
        if tgt_mask is not None:
            m = m & tgt_mask
        return m

    def _sa(self, x, m):
        return self.self_attn(x, x, x, m)[0]

    def _ca(self, x, memory, memory_mask):
        return self.cross_attn(x, memory, memory, memory_mask)[0]

    def _ff(self, x):
        return self.ff2(torch.relu(self.ff1(x)))

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        m = self._causal(x, tgt_mask)
        if self.norm_first:
            x = x + self._sa(self.norm1(x), m)
            x = x + self._ca(self.norm2(x), memory, memory_mask)
            x = x + self._ff(self.norm3(x))
        else:
            x = self.norm1(x + self._sa(x, m))
            x = self.norm2(x + self._ca(x, memory, memory_mask))
            x = self.norm3(x + self._ff(x))
        return x
