"""Relative-position attention whose clipped offset table is built in __init__ as a plain attribute (not a buffer), so it stays on the CPU when the module moves and indexes rel_k from there."""
import math

import torch
import torch.nn as nn


class RelativeSelfAttention(nn.Module):
    """Self-attention with learned relative-position keys (Shaw et al., 2018), clipped at max_distance."""

    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__()
        assert d_model % num_heads == 0
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.max_distance = max_distance
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.d_head)
        self._table_len = 64
        self._rel_index = self._build_table(self._table_len)  # plain attribute on the CPU

    def _build_table(self, n):
        r = torch.arange(n)
        md = self.max_distance
        return (r[None, :] - r[:, None]).clamp(-md, md) + md  # [i, j] -> clip(j - i) + md

    def _split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.d_head).transpose(1, 2)

    def forward(self, x, mask=None):
        B, T, _ = x.shape
        if T > self._table_len:
            self._table_len = T
            self._rel_index = self._build_table(T)
        q = self._split(self.W_q(x))
        k = self._split(self.W_k(x))
        v = self._split(self.W_v(x))
        r = self.rel_k(self._rel_index[:T, :T])  # (T, T, d)
        scores = q @ k.transpose(-2, -1) + torch.einsum("bhid,ijd->bhij", q, r)
        scores = scores / math.sqrt(self.d_head)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        w = torch.softmax(scores, dim=-1)
        out = (w @ v).transpose(1, 2).reshape(B, T, self.d_model)
        return self.W_o(out), w
