"""Transformer decoder layer whose multi-head attention folds the heads into the batch for torch.bmm
(the mask is expanded to (B, H, Tq, Tk) and folded the same way); the layer builds its causal mask
with tril, ANDs it with tgt_mask when given, and routes memory_mask to the cross-attention.
Correct (unusual style: (B*H) batched bmm, explicit branches for both norm placements)."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.nh = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _fold(self, t):
        B, T, D = t.shape
        return t.view(B, T, self.nh, D // self.nh).transpose(1, 2).reshape(B * self.nh, T, D // self.nh)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        q, k, v = self._fold(self.W_q(query)), self._fold(self.W_k(key)), self._fold(self.W_v(value))
        s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(D // self.nh)
        if mask is not None:
            m = mask.unsqueeze(1).expand(B, self.nh, Tq, Tk).reshape(B * self.nh, Tq, Tk)
            s = s.masked_fill(~m, float("-inf"))
        p = torch.softmax(s, dim=-1)
        y = torch.bmm(p, v).view(B, self.nh, Tq, -1).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(y), p.view(B, self.nh, Tq, Tk)


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
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril_()[None]
        sm = causal if tgt_mask is None else causal & tgt_mask
        ff = lambda t: self.ff2(torch.relu(self.ff1(t)))  # noqa: E731
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, sm)[0]
            x = x + self.cross_attn(self.norm2(x), memory, memory, memory_mask)[0]
            x = x + ff(self.norm3(x))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, sm)[0])
            x = self.norm2(x + self.cross_attn(x, memory, memory, memory_mask)[0])
            x = self.norm3(x + ff(x))
        return x
