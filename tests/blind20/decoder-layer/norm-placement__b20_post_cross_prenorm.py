"""Transformer decoder layer whose post-LN branch writes the cross-attention sub-layer in pre-LN form
(x = x + cross_attn(norm2(x), memory)) between two post-LN sub-layers. Mistake: with norm_first=False
the layer mixes post- and pre-LN; the pre-LN branch is right."""

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
        sm = torch.ones(T, T, dtype=torch.bool, device=x.device).tril().unsqueeze(0)
        if tgt_mask is not None:
            sm = sm & tgt_mask
        if self.norm_first:
            y = self.norm1(x)
            x = x + self.self_attn(y, y, y, sm)[0]
            x = x + self.cross_attn(self.norm2(x), memory, memory, memory_mask)[0]
            x = x + self.ff2(torch.relu(self.ff1(self.norm3(x))))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, sm)[0])
            x = x + self.cross_attn(self.norm2(x), memory, memory, memory_mask)[0]  # MISTAKE
            x = self.norm3(x + self.ff2(torch.relu(self.ff1(x))))
        return x
