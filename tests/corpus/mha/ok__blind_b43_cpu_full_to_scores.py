"""Multi-head attention whose -inf fill tensor is made on the CPU with torch.full and then moved with .to(scores), taking the scores' dtype and device."""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        assert d_model % num_heads == 0
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _split(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_head).transpose(1, 2)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        q = self._split(self.W_q(query))
        k = self._split(self.W_k(key))
        v = self._split(self.W_v(value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            fill = torch.full(tuple(scores.shape[-2:]), float("-inf")).to(scores)
            scores = torch.where(mask.unsqueeze(1), scores, fill)
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, Tq, self.d_model)
        return self.W_o(out), weights
