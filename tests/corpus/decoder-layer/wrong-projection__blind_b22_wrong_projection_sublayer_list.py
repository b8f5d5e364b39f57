"""decoder-layer: einsum attention, sub-layers driven from a list."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.h = num_heads
        self.dk = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _heads(self, t):
        return t.unflatten(-1, (self.h, self.dk)).permute(0, 2, 1, 3)  # (B, h, T, dk)

    def forward(self, query, key, value, mask=None):
        q = self._heads(self.W_q(query))
        k = self._heads(self.W_q(key))  # MISTAKE
        v = self._heads(self.W_v(value))
        att = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(self.dk)
        if mask is not None:
            att = att.masked_fill(mask.unsqueeze(1) == 0, float("-inf"))
        att = att.softmax(dim=-1)
        out = torch.einsum("bhij,bhjd->bihd", att, v).flatten(2)
        return self.W_o(out), att


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
        T = x.size(1)
        causal = torch.tril(torch.ones(1, T, T, dtype=torch.bool, device=x.device))
        self_mask = causal if tgt_mask is None else causal & tgt_mask
        sublayers = [
            (self.norm1, lambda h: self.self_attn(h, h, h, self_mask)[0]),
            (self.norm2, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0]),
            (self.norm3, lambda h: self.ff2(torch.relu(self.ff1(h)))),
        ]
        for norm, fn in sublayers:
            x = x + fn(norm(x)) if self.norm_first else norm(x + fn(x))
        return x
