"""Transformer decoder layer with an einsum multi-head attention (heads via unflatten, mask head axis
via [:, None]) and a single sub-layer helper for pre-/post-LN; the causal mask comes from comparing
arange indices and is ANDed with tgt_mask. Correct (unusual style: einsum, index-comparison causal
mask, one residual helper)."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        q = self.W_q(query).unflatten(-1, (self.heads, -1))
        k = self.W_k(key).unflatten(-1, (self.heads, -1))
        v = self.W_v(value).unflatten(-1, (self.heads, -1))
        logits = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.size(-1))
        if mask is not None:
            logits = logits.masked_fill(~mask[:, None], float("-inf"))
        w = logits.softmax(dim=-1)
        return self.W_o(torch.einsum("bhqk,bkhd->bqhd", w, v).flatten(2)), w


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

    def _sub(self, x, norm, fn):
        return x + fn(norm(x)) if self.norm_first else norm(x + fn(x))

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        idx = torch.arange(x.size(1), device=x.device)
        self_mask = (idx[None, :] <= idx[:, None]).unsqueeze(0)
        if tgt_mask is not None:
            self_mask = self_mask & tgt_mask
        x = self._sub(x, self.norm1, lambda h: self.self_attn(h, h, h, self_mask)[0])
        x = self._sub(x, self.norm2, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0])
        x = self._sub(x, self.norm3, lambda h: self.ff2(self.ff1(h).relu()))
        return x
