"""Indexes rel_k.weight with torch.clip'd offsets and scales q once before both dot products."""

import math

import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, max_distance):
        super().__init__()
        self.num_heads = num_heads
        self.max_distance = max_distance
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, d_model // num_heads)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H = self.num_heads
        d = D // H
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2) / math.sqrt(d)  # scaling q scales both terms
        k = self.W_k(x).view(B, T, H, d).transpose(1, 2)
        v = self.W_v(x).view(B, T, H, d).transpose(1, 2)
        pos = torch.arange(T, device=x.device)
        offsets = torch.clip(pos.view(1, T) - pos.view(T, 1), -self.max_distance, self.max_distance)
        r = self.rel_k.weight[offsets + self.max_distance]  # (T, T, d)
        scores = q @ k.transpose(-2, -1) + torch.einsum("bhid,ijd->bhij", q, r)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        weights = scores.softmax(dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(out), weights
