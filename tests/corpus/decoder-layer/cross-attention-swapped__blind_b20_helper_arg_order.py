"""Transformer decoder layer with a small helper _mha(layer, kv_source, q_source, mask) that the
candidate wrote "keys first". Mistake: in the pre-LN branch the cross-attention call passes
(normed x, memory) in (query, memory) order, so the helper takes its queries from memory and its keys
and values from x: an error (shape) when Tq != Tk, silently wrong values when Tq == Tk. The post-LN
branch passes them in the helper's order and is right."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H, d = self.num_heads, self.d_head
        q = self.W_q(query).view(B, Tq, H, d).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, H, d).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, H, d).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
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

    def _mha(self, layer, kv_source, q_source, mask):
        return layer(q_source, kv_source, kv_source, mask)[0]

    def _causal(self, x, tgt_mask):
        T = x.shape[1]
        m = torch.ones(T, T, dtype=torch.bool, device=x.device).tril().unsqueeze(0)
        return m if tgt_mask is None else m & tgt_mask

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        self_mask = self._causal(x, tgt_mask)
        if self.norm_first:
            h = self.norm1(x)
            x = x + self._mha(self.self_attn, h, h, self_mask)
            h = self.norm2(x)
            x = x + self._mha(self.cross_attn, h, memory, memory_mask)  # MISTAKE
            x = x + self.ff2(torch.relu(self.ff1(self.norm3(x))))
        else:
            x = self.norm1(x + self._mha(self.self_attn, x, x, self_mask))
            x = self.norm2(x + self._mha(self.cross_attn, memory, x, memory_mask))
            x = self.norm3(x + self.ff2(torch.relu(self.ff1(x))))
        return x
