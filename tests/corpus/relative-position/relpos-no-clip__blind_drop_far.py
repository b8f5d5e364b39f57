"""Mistake: keys farther than max_distance get no position term at all (zeroed) instead of the clipped edge embedding."""
import math
import torch
import torch.nn as nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, max_distance):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.max_distance = max_distance
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.d)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        M = self.max_distance
        q = self.W_q(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.h, self.d).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.h, self.d).transpose(1, 2)
        pos = torch.arange(T, device=x.device)
        dist = pos[None, :] - pos[:, None]
        in_window = dist.abs() <= M
        idx = torch.where(in_window, dist + M, torch.zeros_like(dist))
        R = self.rel_k(idx) * in_window[..., None].to(x.dtype)    # far pairs: zero vector
        rel_scores = torch.einsum("bhid,ijd->bhij", q, R)
        scores = (q @ k.transpose(-2, -1) + rel_scores) / math.sqrt(self.d)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        w = torch.softmax(scores, dim=-1)
        out = (w @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(out), w
