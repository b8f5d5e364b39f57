"""Transformer decoder layer with a residual helper shared by the three sub-layers; the causal mask is
ANDed with tgt_mask for the self-attention. Mistake: the cross-attention lambda is handed tgt_mask
instead of memory_mask, so the memory keys are never hidden by memory_mask and tgt_mask (shaped for
Tq keys) is applied to the Tk memory keys: wrong values when Tq == Tk, an error otherwise."""

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

    def _sub(self, x, norm, fn):
        if self.norm_first:
            return x + fn(norm(x))
        return norm(x + fn(x))

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        Tq = x.size(1)
        causal = torch.tril(torch.ones(Tq, Tq, dtype=torch.bool, device=x.device)).unsqueeze(0)
        self_mask = causal if tgt_mask is None else causal & tgt_mask
        x = self._sub(x, self.norm1, lambda h: self.self_attn(h, h, h, self_mask)[0])
        x = self._sub(x, self.norm2, lambda h: self.cross_attn(h, memory, memory, tgt_mask)[0])  # MISTAKE
        x = self._sub(x, self.norm3, lambda h: self.ff2(torch.relu(self.ff1(h))))
        return x
