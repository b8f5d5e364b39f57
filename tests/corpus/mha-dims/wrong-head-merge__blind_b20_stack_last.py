"""Multi-head attention with per-head widths whose merge unbinds the heads and stacks them on a new last
axis before flattening. Mistake: stacking on dim=-1 gives (B, Tq, dv, H), so flattening interleaves the
heads (feature j*H + h is feature j of head h) instead of putting head h at [h*dv, (h+1)*dv);
torch.cat(heads, dim=-1) would have been right."""

import math

import torch
from torch import nn


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim: int, num_heads: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.num_heads, self.dk, self.dv = num_heads, dk, dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        H = self.num_heads
        q = self.W_q(query).view(B, Tq, H, self.dk).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, H, self.dk).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, H, self.dv).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk)
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None], float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        heads = (weights @ v).unbind(dim=1)
        merged = torch.stack(heads, dim=-1).flatten(start_dim=-2)  # MISTAKE
        return self.W_o(merged), weights
