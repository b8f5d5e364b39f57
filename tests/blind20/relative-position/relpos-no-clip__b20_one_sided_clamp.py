"""Shaw-style relative self-attention that clamps the offsets only from below (the candidate thinks of
distances into the past as the ones that grow). Mistake: offsets j - i above +max_distance are not
clipped, so their index runs past the 2m+1 embeddings and the lookup raises an IndexError as soon as
T > max_distance + 1."""

import math

import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__()
        self.H = num_heads
        self.k_max = max_distance
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.d)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self.W_q(x).view(B, T, self.H, self.d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.H, self.d).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.H, self.d).transpose(1, 2)
        pos = torch.arange(T, device=x.device)
        dist = pos[None, :] - pos[:, None]
        idx = dist.clamp(min=-self.k_max) + self.k_max  # MISTAKE
        rel = self.rel_k(idx)
        content = torch.einsum("bhid,bhjd->bhij", q, k)
        position = torch.einsum("bhid,ijd->bhij", q, rel)
        scores = (content + position) / math.sqrt(self.d)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        y = torch.einsum("bhij,bhjd->bhid", attn, v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), attn
