"""Decoder layer that hands tgt_mask to cross-attention instead of memory_mask: mask-misrouted."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _split(self, t):
        B, T, D = t.shape
        return t.view(B, T, self.heads, D // self.heads).permute(0, 2, 1, 3)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        q, k, v = self._split(self.W_q(query)), self._split(self.W_k(key)), self._split(self.W_v(value))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if mask is not None:
            bias = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device)
            bias = bias.masked_fill(~mask, float("-inf"))
            scores = scores + bias.unsqueeze(1)
        w = F.softmax(scores, dim=-1)
        out = torch.matmul(w, v).permute(0, 2, 1, 3).reshape(B, Tq, D)
        return self.W_o(out), w


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
        Tq = x.shape[1]
        i = torch.arange(Tq, device=x.device)
        causal = (i.view(-1, 1) >= i.view(1, -1)).unsqueeze(0)
        self_mask = causal & tgt_mask if tgt_mask is not None else causal

        h = self.norm1(x) if self.norm_first else x
        s, _ = self.self_attn(h, h, h, mask=self_mask)
        x = x + s if self.norm_first else self.norm1(x + s)

        h = self.norm2(x) if self.norm_first else x
        c, _ = self.cross_attn(h, memory, memory, mask=tgt_mask)  # MISTAKE
        x = x + c if self.norm_first else self.norm2(x + c)

        h = self.norm3(x) if self.norm_first else x
        f = self.ff2(F.relu(self.ff1(h)))
        x = x + f if self.norm_first else self.norm3(x + f)
        return x
