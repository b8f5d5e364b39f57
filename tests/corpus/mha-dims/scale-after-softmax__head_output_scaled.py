"""Per-head loop: raw scores; each head's output multiplied by dk**-0.5."""

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
        q, k, v = self.W_q(query), self.W_k(key), self.W_v(value)
        outs, weights = [], []
        for h in range(self.num_heads):
            qh = q[..., h * self.dk:(h + 1) * self.dk]  # (B, Tq, dk)
            kh = k[..., h * self.dk:(h + 1) * self.dk]  # (B, Tk, dk)
            vh = v[..., h * self.dv:(h + 1) * self.dv]  # (B, Tk, dv)
            s = qh @ kh.transpose(-2, -1)
            if mask is not None:
                s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
            w = torch.softmax(s, dim=-1)
            outs.append((w @ vh) * self.dk ** -0.5)
            weights.append(w)
        return self.W_o(torch.cat(outs, dim=-1)), torch.stack(weights, dim=1)
