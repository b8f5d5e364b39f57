"""Shaw-style relative self-attention that indexes the relative keys with the right clipped j - i,
but reads them from rel_k's table flipped along the offset axis (the candidate remembers the table as
"ordered from the future to the past"). Mistake: row o + m of the flipped table is embedding m - o,
i.e. the term used for (i, j) is that of offset i - j instead of j - i."""

import math

import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__()
        self.num_heads, self.max_distance = num_heads, max_distance
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.d_head)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H, d, m = self.num_heads, self.d_head, self.max_distance
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)
        k = self.W_k(x).view(B, T, H, d).transpose(1, 2)
        v = self.W_v(x).view(B, T, H, d).transpose(1, 2)
        table = self.rel_k.weight.flip(0)  # MISTAKE
        ar = torch.arange(T, device=x.device)
        rel = torch.clamp(ar.view(1, T) - ar.view(T, 1), -m, m) + m
        r = table[rel]  # (T, T, d)
        scores = (q @ k.transpose(-2, -1) + torch.einsum("bhid,ijd->bhij", q, r)) / math.sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(out), weights
