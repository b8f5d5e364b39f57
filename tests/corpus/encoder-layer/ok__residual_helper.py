"""MHA folding heads into the batch (bmm); a residual helper in the layer."""

import math

import torch
import torch.nn.functional as F
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
            attn = attn.masked_fill(~m, torch.finfo(attn.dtype).min)
        attn = torch.softmax(attn, dim=-1)
        out = torch.bmm(attn, v)  # (B*H, Tq, d)
        out = out.view(B, H, Tq, self.head_dim).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(out), attn.view(B, H, Tq, Tk)


class EncoderLayer(nn.Module):
    """One residual helper for both sub-layers; the order of add and norm follows norm_first."""

    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1, self.ff2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def _residual(self, x, norm, sublayer):
        if self.norm_first:
            return x + sublayer(norm(x))
        return norm(x + sublayer(x))

    def forward(self, x, mask=None):
        x = self._residual(x, self.norm1, lambda h: self.self_attn(h, h, h, mask=mask)[0])
        return self._residual(x, self.norm2, lambda h: self.ff2(F.relu(self.ff1(h))))
