"""Shaw-style relative self-attention that never builds the (T, T, d) table of relative keys: each query
is dotted with all 2m+1 relative embeddings at once (q @ rel_k.weight^T) and the term for each (i, j)
is picked with torch.gather at index clip(j - i, -m, m) + m. Correct (unusual style: gather over
offset logits instead of an einsum with gathered embeddings)."""

import math

import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__()
        self.h = num_heads
        self.m = max_distance
        self.dh = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.dh)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        split = lambda t: t.view(B, T, self.h, self.dh).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))
        rel_logits = q @ self.rel_k.weight.t()  # (B, H, T, 2m+1)
        idx = torch.arange(T, device=x.device)
        idx = (idx[None, :] - idx[:, None]).clamp(-self.m, self.m) + self.m  # [i, j] -> j - i
        pos_term = rel_logits.gather(-1, idx.expand(B, self.h, T, T))
        scores = (q @ k.transpose(-2, -1) + pos_term) / math.sqrt(self.dh)
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None], float("-inf"))
        w = torch.softmax(scores, dim=-1)
        y = (w @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), w
