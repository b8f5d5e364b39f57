"""Transformer decoder layer that combines its causal mask with tgt_mask using logical OR. Mistake: with
True = may attend, OR makes a key visible when either mask allows it, so once a tgt_mask is given every
later position that tgt_mask allows becomes visible (the causal constraint is lost; padded past keys
also reappear). Without tgt_mask the causal mask alone is used and the layer is right."""

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

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        T = x.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()[None]
        self_mask = causal if tgt_mask is None else torch.logical_or(causal, tgt_mask)  # MISTAKE
        ff = lambda t: self.ff2(torch.relu(self.ff1(t)))  # noqa: E731
        if self.norm_first:
            n1 = self.norm1(x)
            x = x + self.self_attn(n1, n1, n1, self_mask)[0]
            x = x + self.cross_attn(self.norm2(x), memory, memory, memory_mask)[0]
            x = x + ff(self.norm3(x))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, self_mask)[0])
            x = self.norm2(x + self.cross_attn(x, memory, memory, memory_mask)[0])
            x = self.norm3(x + ff(x))
        return x
