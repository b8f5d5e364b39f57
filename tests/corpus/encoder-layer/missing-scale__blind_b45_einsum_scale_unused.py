"""Encoder layer with an einsum attention that stores 1/sqrt(d) but never multiplies the scores by it: missing-scale."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.num_heads = num_heads
        self.d = d_model // num_heads
        self.scale = 1.0 / math.sqrt(self.d)
        self.W_q = nn.Linear(d_model, d_model, bias=True)
        self.W_k = nn.Linear(d_model, d_model, bias=True)
        self.W_v = nn.Linear(d_model, d_model, bias=True)
        self.W_o = nn.Linear(d_model, d_model, bias=True)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.size(1)
        H = self.num_heads
        q = self.W_q(query).view(B, Tq, H, self.d).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, H, self.d).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, H, self.d).transpose(1, 2)
        scores = torch.einsum("bhid,bhjd->bhij", q, k)  # MISTAKE
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = torch.einsum("bhij,bhjd->bhid", weights, v)
        out = out.transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(out), weights


class EncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, mask)[0]
            x = x + self.ff2(torch.relu(self.ff1(self.norm2(x))))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, mask)[0])
            x = self.norm2(x + self.ff2(torch.relu(self.ff1(x))))
        return x
