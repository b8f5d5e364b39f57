"""Softmax over dim=-2 (the query axis of (B, H, Tq, Tk)) instead of the keys."""

import math

import torch
import torch.nn.functional as F
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
        B, Tq, D = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).view(B, Tq, self.num_heads, self.d_k).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, self.num_heads, self.d_k).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, self.num_heads, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        weights = F.softmax(scores, dim=-2)
        y = (weights @ v).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(y), weights
