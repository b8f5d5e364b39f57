"""Slices by index: the values take the k slice [D, 2D) again."""

import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.d_model, self.num_heads = d_model, num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        D, H = self.d_model, self.num_heads
        d = D // H
        qkv = self.W_qkv(x)
        q, k, v = qkv[..., :D], qkv[..., D:2 * D], qkv[..., D:2 * D]
        outs, probs = [], []
        for h in range(H):
            cols = slice(h * d, (h + 1) * d)
            s = q[..., cols] @ k[..., cols].transpose(1, 2) / math.sqrt(d)  # (B, T, T)
            if mask is not None:
                s = s.masked_fill(mask.logical_not(), -torch.inf)
            p = torch.softmax(s, dim=-1)
            if mask is not None:
                p = p.masked_fill(~mask.any(-1, keepdim=True), 0.0)
            probs.append(p)
            outs.append(p @ v[..., cols])
        return self.W_o(torch.cat(outs, dim=-1)), torch.stack(probs, dim=1)
