"""Encoder layer built on split/merge/attend helper functions, a hand-written softmax, F.linear with W_o's weight and a sub-layer loop: correct."""
import math

import torch
from torch import nn
import torch.nn.functional as F


def split_heads(t, n_heads):
    # (B, T, D) -> (B, H, T, d)
    B, T, D = t.shape
    return t.reshape(B, T, n_heads, D // n_heads).permute(0, 2, 1, 3)


def merge_heads(t):
    # (B, H, T, d) -> (B, T, H*d)
    B, H, T, d = t.shape
    return t.permute(0, 2, 1, 3).reshape(B, T, H * d)


def attend(q, k, v, mask=None):
    d = q.size(-1)
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
    if mask is not None:
        s = s.masked_fill(mask.logical_not(), torch.finfo(s.dtype).min)
    s = s - s.amax(dim=-1, keepdim=True)
    e = s.exp()
    p = e / e.sum(dim=-1, keepdim=True)
    return p @ v, p


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        assert d_model % num_heads == 0
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        q = split_heads(self.W_q(query), self.num_heads)
        k = split_heads(self.W_k(key), self.num_heads)
        v = split_heads(self.W_v(value), self.num_heads)
        if mask is not None:
            mask = mask.unsqueeze(1)  # (B, 1, Tq or 1, Tk): one mask for every head
        ctx, w = attend(q, k, v, mask)
        out = F.linear(merge_heads(ctx), self.W_o.weight, self.W_o.bias)
        return out, w


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.act = nn.ReLU()
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        sa = lambda h: self.self_attn(h, h, h, mask)[0]
        ff = lambda h: self.ff2(self.act(self.ff1(h)))
        for norm, block in ((self.norm1, sa), (self.norm2, ff)):
            x = x + block(norm(x)) if self.norm_first else norm(x + block(x))
        return x
