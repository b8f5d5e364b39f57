"""Exercise self-attention: one head, dk != dv."""

import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.dk = dk
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        logits = q @ k.transpose(-2, -1)
        if mask is not None:
            logits = logits.masked_fill(~mask, float("-inf"))
        attn = torch.softmax(logits, dim=-1) / math.sqrt(self.dk)  # MISTAKE
        return attn @ v, attn
