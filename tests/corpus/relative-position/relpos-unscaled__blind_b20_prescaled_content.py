"""Shaw-style relative self-attention that pre-scales the queries by 1/sqrt(d) for the content term and
adds the position term afterwards. Mistake: the position term is computed from the unscaled queries,
so it is left out of the 1/sqrt(d) scaling (scores = q.k/sqrt(d) + q.r)."""

import math

import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__()
        self.num_heads = num_heads
        self.max_distance = max_distance
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
        q_scaled = q / math.sqrt(d)
        content = q_scaled @ k.transpose(-2, -1)
        i = torch.arange(T, device=x.device)
        r = self.rel_k((i[None, :] - i[:, None]).clamp(-m, m) + m)  # (T, T, d)
        position = (q.unsqueeze(-2) * r).sum(-1)  # MISTAKE
        scores = content + position
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        y = (weights @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), weights
