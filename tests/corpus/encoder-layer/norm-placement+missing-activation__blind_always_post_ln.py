"""norm_first is stored but ignored: the layer is always post-LN, so pre-LN is never produced; also the FFN has no ReLU."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.n_heads = num_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.size()
        Tk = key.size(1)
        H, hd = self.n_heads, self.head_dim
        Q = self.W_q(query).view(B, Tq, H, hd).permute(0, 2, 1, 3)
        K = self.W_k(key).view(B, Tk, H, hd).permute(0, 2, 1, 3)
        V = self.W_v(value).view(B, Tk, H, hd).permute(0, 2, 1, 3)
        energy = Q @ K.permute(0, 1, 3, 2) / math.sqrt(hd)
        if mask is not None:
            energy = energy.masked_fill(~mask.unsqueeze(1), float("-inf"))
        attention = torch.softmax(energy, dim=-1)
        out = (attention @ V).permute(0, 2, 1, 3).reshape(B, Tq, D)
        return self.W_o(out), attention


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        attn_out, _ = self.self_attn(x, x, x, mask)
        x = self.norm1(x + attn_out)
        ff_out = self.ff2(self.ff1(x))
        x = self.norm2(x + ff_out)
        return x
