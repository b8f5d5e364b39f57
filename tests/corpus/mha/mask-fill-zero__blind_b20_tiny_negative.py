"""Multi-head attention that fills the hidden scores with a "very negative" constant. Mistake: the
constant is written -1e-9 (a typo for -1e9), which is essentially zero, so hidden keys keep a score of
about 0 and with it a sizeable share of the probability."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        assert d_model % num_heads == 0
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.size(1)
        q = self.W_q(query).view(B, Tq, self.num_heads, self.d_head).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, self.num_heads, self.d_head).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, self.num_heads, self.d_head).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            scores = scores.masked_fill(mask.unsqueeze(1).logical_not(), -1e-9)  # MISTAKE
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(out), weights
