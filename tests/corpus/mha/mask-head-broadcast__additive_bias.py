"""Turns the mask into an additive (B, Tq, Tk) bias and adds it to (B, H, Tq, Tk) scores without a head axis."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.n_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.size(1)
        H = self.n_heads
        d = D // H
        q = self.W_q(query).view(B, Tq, H, d).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, H, d).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, H, d).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(d)
        if mask is not None:
            attn_bias = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device)
            attn_bias = attn_bias.masked_fill(~mask, torch.finfo(scores.dtype).min)
            scores = scores + attn_bias
        weights = scores.softmax(-1)
        y = torch.matmul(weights, v).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(y), weights
