"""Exercise self-attention: one head, dk != dv."""

import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def forward(self, x, mask=None):
        Q = self.W_q(x)
        K = self.W_k(x)
        V = self.W_v(x)
        attn_score = torch.bmm(Q, K.permute(0, 2, 1)) / math.sqrt(x.size(-1))  # MISTAKE
        if mask is not None:
            attn_score = attn_score.masked_fill(mask == 0, torch.finfo(attn_score.dtype).min)
        attn_weight = torch.softmax(attn_score, dim=-1)
        return torch.bmm(attn_weight, V), attn_weight
