"""Exercise relative-position: Shaw et al. relative keys."""

import math

import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__()
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.max_distance = max_distance
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.d_head)

    def rel_index(self, T, device):
        idx = torch.arange(T, device=device)
        dist = idx.unsqueeze(1) - idx.unsqueeze(0)  # MISTAKE
        return dist.clamp(-self.max_distance, self.max_distance) + self.max_distance

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H, d = self.num_heads, self.d_head
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)
        k = self.W_k(x).view(B, T, H, d).transpose(1, 2)
        v = self.W_v(x).view(B, T, H, d).transpose(1, 2)
        r = self.rel_k(self.rel_index(T, x.device))  # (T, T, d)
        scores = (q @ k.transpose(-1, -2) + torch.einsum("bhid,ijd->bhij", q, r)) / math.sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        attn = torch.softmax(scores, dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(out), attn
