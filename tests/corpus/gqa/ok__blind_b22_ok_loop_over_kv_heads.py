"""gqa: one kv head at a time, its query heads sliced straight out of W_q's output."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, _ = x.shape
        rep = self.num_heads // self.num_kv_heads
        d = self.head_dim
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        outs, probs = [], []
        for g in range(self.num_kv_heads):
            kg = K[..., g * d : (g + 1) * d].unsqueeze(1)  # (B, 1, T, d)
            vg = V[..., g * d : (g + 1) * d].unsqueeze(1)
            qg = Q[..., g * rep * d : (g + 1) * rep * d].reshape(B, T, rep, d).transpose(1, 2)  # (B, rep, T, d)
            s = qg @ kg.transpose(-1, -2) / math.sqrt(d)  # (B, rep, T, T)
            if mask is not None:
                s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
            p = torch.softmax(s, dim=-1)
            probs.append(p)
            outs.append((p @ vg).transpose(1, 2).reshape(B, T, rep * d))
        y = torch.cat(outs, dim=-1)  # query head h back at features [h*d, (h+1)*d)
        return self.W_o(y), torch.cat(probs, dim=1)
