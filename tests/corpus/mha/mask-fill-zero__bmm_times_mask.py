"""bmm over folded heads; the scores multiplied by the repeated mask instead of filled."""

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scaling = self.head_dim**-0.5
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _fold(self, x):
        B, T, D = x.shape
        x = x.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        return x.reshape(B * self.num_heads, T, self.head_dim)  # index b * H + h

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H = self.num_heads
        q = self._fold(self.W_q(query) * self.scaling)
        k = self._fold(self.W_k(key))
        v = self._fold(self.W_v(value))
        attn = torch.bmm(q, k.transpose(1, 2))  # (B*H, Tq, Tk)
        if mask is not None:
            m = mask.repeat_interleave(H, dim=0)  # (B*H, Tq|1, Tk), same order as the fold
            attn = attn * m
        attn = torch.softmax(attn, dim=-1)
        out = torch.bmm(attn, v)  # (B*H, Tq, d)
        out = out.view(B, H, Tq, self.head_dim).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(out), attn.view(B, H, Tq, Tk)
