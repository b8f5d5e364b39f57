"""Multi-head attention computed one head at a time: for each head the feature slice [h*d, (h+1)*d)
of q, k, v is attended separately (the 3-D mask lines up with the per-head scores directly), the
head outputs are concatenated along the features in head order and the weights stacked on dim 1.
Correct (unusual style: explicit loop over heads, torch.cat merge)."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        Q, K, V = self.W_q(query), self.W_k(key), self.W_v(value)
        hd = self.head_dim
        outs, probs = [], []
        for h in range(self.num_heads):
            sl = slice(h * hd, (h + 1) * hd)
            s = Q[..., sl] @ K[..., sl].transpose(1, 2) / math.sqrt(hd)  # (B, Tq, Tk)
            if mask is not None:
                s = s.masked_fill(mask == 0, float("-inf"))
            p = torch.softmax(s, dim=-1)
            probs.append(p)
            outs.append(p @ V[..., sl])
        return self.W_o(torch.cat(outs, dim=-1)), torch.stack(probs, dim=1)
