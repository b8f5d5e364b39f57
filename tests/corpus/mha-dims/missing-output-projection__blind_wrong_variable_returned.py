"""Mistake: computes W_o(ctx) into `projected` but returns the unprojected ctx."""
import torch
from torch import nn


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim, num_heads, dk, dv, bias=True):
        super().__init__()
        self.n = num_heads
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        q = self.W_q(query).unflatten(-1, (self.n, -1)).transpose(1, 2)
        k = self.W_k(key).unflatten(-1, (self.n, -1)).transpose(1, 2)
        v = self.W_v(value).unflatten(-1, (self.n, -1)).transpose(1, 2)
        s = torch.einsum("bhid,bhjd->bhij", q, k) / q.shape[-1] ** 0.5
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), torch.finfo(s.dtype).min)
        a = s.softmax(-1)
        ctx = torch.einsum("bhij,bhjc->bhic", a, v).transpose(1, 2).flatten(2)
        projected = self.W_o(ctx)
        return ctx, a
