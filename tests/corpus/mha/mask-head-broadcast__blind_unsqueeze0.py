"""Adds the missing axis at the front (mask.unsqueeze(0)), so the mask's batch axis lines up with the heads."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H, d = self.num_heads, D // self.num_heads
        q = self.W_q(query).view(B, Tq, H, d).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, H, d).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, H, d).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        if mask is not None:
            mask = mask.unsqueeze(0)            # make it 4-D
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(out), weights
