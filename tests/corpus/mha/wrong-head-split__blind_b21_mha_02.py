"""Exercise mha: multi-head attention (bmm over batch * heads)."""

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

    def _split(self, t):
        B, T, _ = t.shape
        return t.contiguous().view(B * self.num_heads, T, self.d_head)  # MISTAKE

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H = self.num_heads
        q = self._split(self.W_q(query))  # (B*H, Tq, d)
        k = self._split(self.W_k(key))  # (B*H, Tk, d)
        v = self._split(self.W_v(value))
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.d_head)  # (B*H, Tq, Tk)
        if mask is not None:
            m = mask.repeat_interleave(H, dim=0)  # (B*H, Tq or 1, Tk)
            scores = scores.masked_fill(~m, torch.finfo(scores.dtype).min)
        attn = torch.softmax(scores, dim=-1)
        ctx = torch.bmm(attn, v)  # (B*H, Tq, d)
        ctx = ctx.view(B, H, Tq, self.d_head).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(ctx), attn.view(B, H, Tq, Tk)
