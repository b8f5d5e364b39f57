"""Correct: builds a (T, T, d) table of relative keys with the embedding and contracts it with einsum."""
import math
import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__()
        self.H = num_heads
        self.M = max_distance
        d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, d)

    def relative_keys(self, T, device):
        r = torch.arange(T, device=device)
        dist = r.view(1, T) - r.view(T, 1)                       # [i, j] = j - i
        dist = torch.clamp(dist, min=-self.M, max=self.M)
        return self.rel_k(dist + self.M)                         # (T, T, d)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self.W_q(x).unflatten(-1, (self.H, -1))              # (B, T, H, d)
        k = self.W_k(x).unflatten(-1, (self.H, -1))
        v = self.W_v(x).unflatten(-1, (self.H, -1))
        R = self.relative_keys(T, x.device)
        s = torch.einsum("bihd,bjhd->bhij", q, k) + torch.einsum("bihd,ijd->bhij", q, R)
        s = s / math.sqrt(q.shape[-1])
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
        w = s.softmax(dim=-1)
        out = torch.einsum("bhij,bjhd->bihd", w, v).reshape(B, T, D)
        return self.W_o(out), w
