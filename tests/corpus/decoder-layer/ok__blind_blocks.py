"""Correct: PyTorch-style _sa_block/_mha_block/_ff_block helpers, einsum attention."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.h = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        q = self.W_q(query).unflatten(-1, (self.h, -1))
        k = self.W_k(key).unflatten(-1, (self.h, -1))
        v = self.W_v(value).unflatten(-1, (self.h, -1))
        logits = torch.einsum("bqhd,bkhd->bhqk", q, k) / q.shape[-1] ** 0.5
        if mask is not None:
            logits = logits.masked_fill(~mask[:, None], torch.finfo(logits.dtype).min)
        w = logits.softmax(dim=-1)
        ctx = torch.einsum("bhqk,bkhd->bqhd", w, v).flatten(-2)
        return self.W_o(ctx), w


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

    @staticmethod
    def _causal(t, device):
        return torch.ones(t, t, dtype=torch.bool, device=device).tril()[None]

    def _sa_block(self, x, tgt_mask):
        mask = self._causal(x.shape[1], x.device)
        if tgt_mask is not None:
            mask = mask & tgt_mask
        return self.self_attn(x, x, x, mask)[0]

    def _mha_block(self, x, mem, memory_mask):
        return self.cross_attn(x, mem, mem, memory_mask)[0]

    def _ff_block(self, x):
        return self.ff2(torch.relu(self.ff1(x)))

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask))
            x = self.norm3(x + self._ff_block(x))
        return x
