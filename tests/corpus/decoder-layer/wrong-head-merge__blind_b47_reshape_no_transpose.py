import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H, hd = self.num_heads, self.head_dim
        q = self.W_q(query).view(B, Tq, H, hd).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, H, hd).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, H, hd).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        ctx = weights @ v  # (B, H, Tq, hd)
        ctx = ctx.reshape(B, Tq, D)  # MISTAKE: head axis never moved back next to hd
        return self.W_o(ctx), weights


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

    def _sa(self, x, tgt_mask):
        T = x.shape[1]
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))[None]
        m = causal if tgt_mask is None else (causal & tgt_mask)
        return self.self_attn(x, x, x, m)[0]

    def _ca(self, x, memory, memory_mask):
        return self.cross_attn(x, memory, memory, memory_mask)[0]

    def _ff(self, x):
        return self.ff2(torch.relu(self.ff1(x)))

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self._sa(self.norm1(x), tgt_mask)
            x = x + self._ca(self.norm2(x), memory, memory_mask)
            x = x + self._ff(self.norm3(x))
        else:
            x = self.norm1(x + self._sa(x, tgt_mask))
            x = self.norm2(x + self._ca(x, memory, memory_mask))
            x = self.norm3(x + self._ff(x))
        return x
