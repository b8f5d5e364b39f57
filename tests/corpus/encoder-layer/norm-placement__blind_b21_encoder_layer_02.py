"""Exercise encoder-layer: attention + feed-forward, residuals, LayerNorm."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B = query.size(0)
        q = self.W_q(query).view(B, -1, self.num_heads, self.d_k).transpose(1, 2)
        k = self.W_k(key).view(B, -1, self.num_heads, self.d_k).transpose(1, 2)
        v = self.W_v(value).view(B, -1, self.num_heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask.unsqueeze(1) == 0, torch.finfo(scores.dtype).min)
        p_attn = scores.softmax(dim=-1)
        x = torch.matmul(p_attn, v).transpose(1, 2).contiguous().view(B, -1, self.num_heads * self.d_k)
        return self.W_o(x), p_attn


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def ffn(self, x):
        return self.ff2(torch.relu(self.ff1(x)))

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, mask)[0]
            x = self.norm2(x + self.ffn(x))  # MISTAKE
        else:
            x = self.norm1(x + self.self_attn(x, x, x, mask)[0])
            x = self.norm2(x + self.ffn(x))
        return x
