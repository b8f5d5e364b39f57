"""Decoder layer whose attention folds heads into the batch for torch.bmm, always builds biased projections and applies W_o.weight by hand: correct."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.n_heads = num_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def _fold(self, t):
        # (B, T, D) -> (B*H, T, d); row b*H + h is head h of sequence b
        B, T, _ = t.shape
        t = t.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        return t.reshape(B * self.n_heads, T, self.head_dim)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.size(1)
        q = self._fold(self.W_q(query))
        k = self._fold(self.W_k(key))
        v = self._fold(self.W_v(value))
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.head_dim)  # (B*H, Tq, Tk)
        if mask is not None:
            m = mask.expand(B, Tq, Tk).repeat_interleave(self.n_heads, dim=0)
            scores = scores.masked_fill(~m, float("-inf"))
        p = torch.softmax(scores, dim=-1)
        ctx = torch.bmm(p, v)  # (B*H, Tq, d)
        ctx = ctx.view(B, self.n_heads, Tq, self.head_dim).transpose(1, 2).reshape(B, Tq, D)
        out = ctx @ self.W_o.weight.T + self.W_o.bias
        return out, p.view(B, self.n_heads, Tq, Tk)


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
        pos = torch.arange(T, device=x.device)
        self_mask = (pos[None, :] <= pos[:, None]).unsqueeze(0)  # key j visible to query i iff j <= i
        if tgt_mask is not None:
            self_mask = self_mask & tgt_mask

        def sa(h):
            return self.self_attn(h, h, h, self_mask)[0]

        def ca(h):
            return self.cross_attn(h, memory, memory, memory_mask)[0]

        def ff(h):
            return self.ff2(torch.relu(self.ff1(h)))

        if self.norm_first:
            x = x + sa(self.norm1(x))
            x = x + ca(self.norm2(x))
            x = x + ff(self.norm3(x))
        else:
            x = self.norm1(x + sa(x))
            x = self.norm2(x + ca(x))
            x = self.norm3(x + ff(x))
        return x
