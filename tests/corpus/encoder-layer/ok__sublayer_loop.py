"""MHA with unflatten and a hand-written softmax; sub-layers walked in a loop."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):  # (B, T, D) -> (B, H, T, d)
        return x.unflatten(-1, (self.num_heads, -1)).transpose(1, 2)

    @staticmethod
    def merge_heads(x):  # (B, H, T, d) -> (B, T, D)
        return x.transpose(1, 2).flatten(-2)

    @staticmethod
    def softmax(x):
        e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
        return e / e.sum(dim=-1, keepdim=True)

    def forward(self, query, key, value, mask=None):
        q = self.split_heads(self.W_q(query))
        k = self.split_heads(self.W_k(key))
        v = self.split_heads(self.W_v(value))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if mask is not None:
            keep = mask.unsqueeze(1)
            scores = torch.where(keep, scores, torch.finfo(scores.dtype).min)
        p = self.softmax(scores)
        return self.W_o(self.merge_heads(torch.matmul(p, v))), p


class EncoderLayer(nn.Module):
    """Sub-layers as (norm, function) pairs walked in a loop, the Annotated Transformer's SublayerConnection."""

    def __init__(self, d_model, num_heads, d_ff, norm_first=False, dropout=0.0):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        steps = [(self.norm1, lambda t: self.self_attn(t, t, t, mask)[0]),
                 (self.norm2, lambda t: self.ff2(self.ff1(t).clamp(min=0)))]
        for norm, f in steps:
            x = x + self.drop(f(norm(x))) if self.norm_first else norm(x + self.drop(f(x)))
        return x
