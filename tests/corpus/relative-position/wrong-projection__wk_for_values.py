"""Values projected by W_k."""

import math

import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, max_distance):
        super().__init__()
        self.h, self.m = num_heads, max_distance
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.d)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H, d, m = self.h, self.d, self.m
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)
        k = self.W_k(x).view(B, T, H, d).transpose(1, 2)
        v = self.W_k(x).view(B, T, H, d).transpose(1, 2)
        pos = torch.arange(T, device=x.device)
        rel = pos[None, :] - pos[:, None]
        r = self.rel_k(rel.clamp(-m, m) + m)
        scores = (q @ k.transpose(-2, -1) + torch.einsum("bhid,ijd->bhij", q, r)) / math.sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        y = weights @ v
        y = y.transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), weights
