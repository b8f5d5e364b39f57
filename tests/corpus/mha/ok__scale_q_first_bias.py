"""Scales q by d**-0.5 before the product; the mask becomes an additive bias built with new_zeros + masked_fill(finfo.min)."""

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.H = num_heads
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).view(B, Tq, self.H, self.d).transpose(1, 2) * self.d**-0.5
        k = self.W_k(key).view(B, Tk, self.H, self.d).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, self.H, self.d).transpose(1, 2)
        scores = q @ k.transpose(2, 3)
        if mask is not None:
            bias = scores.new_zeros(mask.shape).masked_fill(~mask, torch.finfo(scores.dtype).min)
            scores = scores + bias.unsqueeze(1)
        weights = scores.softmax(-1)
        y = (weights @ v).transpose(1, 2).flatten(2)
        return self.W_o(y), weights
