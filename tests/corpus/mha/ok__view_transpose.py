"""Textbook version: view(B, T, H, d).transpose(1, 2), mask.unsqueeze(1), finfo.min fill, transpose back and W_o."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        assert d_model % num_heads == 0
        self.h = num_heads
        self.d_k = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).view(B, Tq, self.h, self.d_k).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, self.h, self.d_k).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, self.h, self.d_k).transpose(1, 2)

        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        if mask is not None:
            mask = mask.unsqueeze(1)  # (B, 1, Tq|1, Tk): same mask for every head
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        attn = torch.softmax(scores, dim=-1)
        x = torch.matmul(attn, v)
        x = x.transpose(1, 2).contiguous().view(B, Tq, D)
        return self.W_o(x), attn
