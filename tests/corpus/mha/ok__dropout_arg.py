"""Has an extra dropout=0.0 constructor argument after bias and an nn.Dropout on the weights (a no-op in eval)."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True, dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.size(1)
        H, d = self.num_heads, self.d_head
        q = self.W_q(query).view(B, Tq, H, d).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, H, d).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, H, d).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(mask.unsqueeze(1).logical_not(), torch.finfo(scores.dtype).min)
        weights = F.softmax(scores, dim=-1)
        y = self.dropout(weights) @ v
        y = y.transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(y), weights
