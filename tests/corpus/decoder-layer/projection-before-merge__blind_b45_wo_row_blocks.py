"""Decoder layer whose attention applies W_o per head with blocks cut from W_o.weight's rows (output features) before summing the heads: projection-before-merge."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.H = num_heads
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H, d = self.H, self.d
        q = self.W_q(query).view(B, Tq, H, d)
        k = self.W_k(key).view(B, Tk, H, d)
        v = self.W_v(value).view(B, Tk, H, d)
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d)
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
        a = torch.softmax(s, dim=-1)
        ctx = torch.einsum("bhqk,bkhd->bhqd", a, v)  # (B, H, Tq, d)
        # project every head with its own block of W_o, then add the heads up
        Wo = self.W_o.weight.view(H, d, D)  # MISTAKE
        out = torch.einsum("bhqd,hde->bqe", ctx, Wo) + self.W_o.bias
        return out, a


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
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
        causal = torch.tril(torch.ones(T, T, device=x.device)).bool()[None]
        self_mask = causal if tgt_mask is None else causal & tgt_mask
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, self_mask)[0]
            h = self.norm2(x)
            x = x + self.cross_attn(h, memory, memory, memory_mask)[0]
            h = self.norm3(x)
            x = x + self.ff2(torch.relu(self.ff1(h)))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, self_mask)[0])
            x = self.norm2(x + self.cross_attn(x, memory, memory, memory_mask)[0])
            x = self.norm3(x + self.ff2(torch.relu(self.ff1(x))))
        return x
