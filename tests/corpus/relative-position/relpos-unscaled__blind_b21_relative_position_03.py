"""Exercise relative-position: Shaw et al. relative keys."""

import math

import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__()
        self.n_heads = num_heads
        self.head_dim = d_model // num_heads
        self.max_distance = max_distance
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.head_dim)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H, d, M = self.n_heads, self.head_dim, self.max_distance
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)
        k = self.W_k(x).view(B, T, H, d).transpose(1, 2)
        v = self.W_v(x).view(B, T, H, d).transpose(1, 2)
        i = torch.arange(T, device=x.device).view(T, 1)
        j = torch.arange(T, device=x.device).view(1, T)
        r = self.rel_k(torch.clamp(j - i, -M, M) + M)  # (T, T, d)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        scores = scores + torch.matmul(q.unsqueeze(3), r.transpose(-1, -2)).squeeze(3)  # MISTAKE
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        y = (weights @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), weights
