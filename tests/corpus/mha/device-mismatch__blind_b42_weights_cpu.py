"""Multi-head attention that is correct throughout but returns its attention weights moved to the CPU with .cpu()."""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).reshape(B, Tq, self.h, self.d).permute(0, 2, 1, 3)
        k = self.W_k(key).reshape(B, Tk, self.h, self.d).permute(0, 2, 1, 3)
        v = self.W_v(value).reshape(B, Tk, self.h, self.d).permute(0, 2, 1, 3)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.d)
        if mask is not None:
            scores = scores.masked_fill(mask[:, None] == 0, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = torch.einsum("bhqk,bhkd->bhqd", weights, v).permute(0, 2, 1, 3).reshape(B, Tq, D)
        # "for logging": keep the weights off the GPU
        return self.W_o(out), weights.cpu()
