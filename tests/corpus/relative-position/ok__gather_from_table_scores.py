"""Never builds (T, T, d): q against the whole table (B, H, T, 2k+1), then each (i, j) gathers its offset's score."""

import math

import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, max_distance):
        super().__init__()
        self.num_heads, self.max_distance = num_heads, max_distance
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, d_model // num_heads)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H, m = self.num_heads, self.max_distance
        d = D // H
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
        k = self.W_k(x).view(B, T, H, d).transpose(1, 2)
        v = self.W_v(x).view(B, T, H, d).transpose(1, 2)
        table = q @ self.rel_k.weight.T  # (B, H, T, 2m+1): q_i against every offset's key
        pos = torch.arange(T, device=x.device)
        idx = (pos[None, :] - pos[:, None]).clamp(-m, m) + m  # (T, T)
        position = table.gather(-1, idx.expand(B, H, T, T))  # (B, H, T, T): [.., i, j] = table[.., i, idx[i, j]]
        scores = (q @ k.transpose(-2, -1) + position) / math.sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        y = (weights @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), weights
