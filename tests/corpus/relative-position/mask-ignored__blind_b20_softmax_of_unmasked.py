"""Shaw-style relative self-attention that stores the masked scores in a new variable. Mistake: the
softmax is then taken of the original, unmasked scores, so the mask changes nothing."""

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
        q, k, v = (w(x).view(B, T, H, d).transpose(1, 2) for w in (self.W_q, self.W_k, self.W_v))
        steps = torch.arange(T, device=x.device)
        offsets = (steps.unsqueeze(0) - steps.unsqueeze(1)).clamp(-m, m)
        r = self.rel_k(offsets + m)
        scores = (q @ k.transpose(-2, -1) + torch.einsum("bhid,ijd->bhij", q, r)) / math.sqrt(d)
        masked = scores
        if mask is not None:
            masked = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # MISTAKE
        y = (weights @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), weights
