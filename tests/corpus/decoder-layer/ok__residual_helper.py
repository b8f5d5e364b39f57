"""MHA folding heads into the batch (bmm); arange causal mask, logical_and."""

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


class DecoderLayer(nn.Module):
    """A residual helper; the causal mask from an arange comparison, one per sequence (this MHA repeats a
    mask per head along the batch, so it needs a (B, Tq, Tq) one), combined with torch.logical_and."""

    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1, self.ff2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))

    def _residual(self, x, norm, sublayer):
        return x + sublayer(norm(x)) if self.norm_first else norm(x + sublayer(x))

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        pos = torch.arange(x.size(1), device=x.device)
        mask = (pos[None, :] <= pos[:, None]).expand(x.size(0), -1, -1)  # (B, Tq, Tq): key j <= query i
        if tgt_mask is not None:
            mask = torch.logical_and(mask, tgt_mask)
        x = self._residual(x, self.norm1, lambda h: self.self_attn(h, h, h, mask)[0])
        x = self._residual(x, self.norm2, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0])
        return self._residual(x, self.norm3, lambda h: self.ff2(F.relu(self.ff1(h))))
