"""Heads are merged in reverse order (head H-1 first), so head h does not return to features [h*d, (h+1)*d) before W_o."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.depth = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H, d = self.num_heads, self.depth
        q = self.W_q(query).view(B, Tq, H, d).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, H, d).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, H, d).transpose(1, 2)

        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None], float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        ctx = weights @ v  # (B, H, Tq, d)

        pieces = [ctx[:, h] for h in range(H)]
        pieces.reverse()
        merged = torch.cat(pieces, dim=-1)  # (B, Tq, D)
        return self.W_o(merged), weights
