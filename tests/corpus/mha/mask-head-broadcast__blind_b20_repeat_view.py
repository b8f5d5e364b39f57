"""Multi-head attention that gives the mask a head axis by tiling it H times and viewing the result as
(B, H, ..., Tk). Mistake: mask.repeat(H, 1, 1) stacks H copies of the whole batch, so viewing it as
(B, H, ...) gives (batch b, head h) the mask of sequence (b*H + h) % B, not b: the same as broadcasting
without a head axis when B == H, silently wrong for other batch sizes, right only when B == 1."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.H = num_heads
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).view(B, Tq, self.H, self.d).permute(0, 2, 1, 3)
        k = self.W_k(key).view(B, Tk, self.H, self.d).permute(0, 2, 1, 3)
        v = self.W_v(value).view(B, Tk, self.H, self.d).permute(0, 2, 1, 3)
        att = (q @ k.transpose(2, 3)) * self.d ** -0.5
        if mask is not None:
            per_head = mask.repeat(self.H, 1, 1).view(B, self.H, -1, Tk)  # MISTAKE
            att = att.masked_fill(~per_head, float("-inf"))
        att = att.softmax(-1)
        y = (att @ v).permute(0, 2, 1, 3).reshape(B, Tq, D)
        return self.W_o(y), att
