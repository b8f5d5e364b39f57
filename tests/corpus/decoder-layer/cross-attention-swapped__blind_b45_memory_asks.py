"""Decoder layer whose cross-attention block takes its queries from memory and its keys and values from x: cross-attention-swapped."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=True)
        self.W_k = nn.Linear(d_model, d_model, bias=True)
        self.W_v = nn.Linear(d_model, d_model, bias=True)
        self.W_o = nn.Linear(d_model, d_model, bias=True)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.size(1)
        H, d = self.num_heads, self.d_head
        Q = self.W_q(query).reshape(B, Tq, H, d).transpose(1, 2)
        K = self.W_k(key).reshape(B, Tk, H, d).transpose(1, 2)
        V = self.W_v(value).reshape(B, Tk, H, d).transpose(1, 2)
        logits = Q @ K.transpose(-1, -2) * (1.0 / math.sqrt(d))
        if mask is not None:
            logits = logits.masked_fill(~mask[:, None, :, :], float("-inf"))
        probs = logits.softmax(-1)
        ctx = (probs @ V).transpose(1, 2).contiguous().view(B, Tq, D)
        return self.W_o(ctx), probs


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

    def self_block(self, h, tgt_mask):
        T = h.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=h.device).tril()[None]
        if tgt_mask is not None:
            causal = causal & tgt_mask
        return self.self_attn(h, h, h, causal)[0]

    def cross_block(self, h, memory, memory_mask):
        y = self.cross_attn(memory, h, h, memory_mask)[0]  # MISTAKE
        return y

    def ff_block(self, h):
        return self.ff2(torch.relu(self.ff1(h)))

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_block(self.norm1(x), tgt_mask)
            x = x + self.cross_block(self.norm2(x), memory, memory_mask)
            x = x + self.ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self.self_block(x, tgt_mask))
            x = self.norm2(x + self.cross_block(x, memory, memory_mask))
            x = self.norm3(x + self.ff_block(x))
        return x
