"""Correct: feed-forward as nn.Sequential(ff1, ReLU, ff2), per-head loop attention."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.n_heads = num_heads
        self.hd = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        Q = self.W_q(query).split(self.hd, dim=-1)
        K = self.W_k(key).split(self.hd, dim=-1)
        V = self.W_v(value).split(self.hd, dim=-1)
        heads, weights = [], []
        for qh, kh, vh in zip(Q, K, V):
            s = qh @ kh.transpose(-2, -1) / math.sqrt(self.hd)
            if mask is not None:
                s = s.masked_fill(mask.logical_not(), float("-inf"))
            p = F.softmax(s, dim=-1)
            heads.append(p @ vh)
            weights.append(p)
        return self.W_o(torch.cat(heads, dim=-1)), torch.stack(weights, dim=1)


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.pre_ln = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.feed_forward = nn.Sequential(self.ff1, nn.ReLU(), self.ff2)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.pre_ln:
            y = self.norm1(x)
            x = x + self.self_attn(y, y, y, mask)[0]
            x = x + self.feed_forward(self.norm2(x))
            return x
        a, _ = self.self_attn(x, x, x, mask)
        x = self.norm1(x + a)
        return self.norm2(x + self.feed_forward(x))
