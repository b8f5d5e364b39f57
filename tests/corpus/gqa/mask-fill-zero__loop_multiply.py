"""Per-query-head loop; scores multiplied by the boolean mask."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        d = self.head_dim
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        d, group = self.head_dim, self.num_heads // self.num_kv_heads
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        outs, probs = [], []
        for h in range(self.num_heads):
            j = h // group
            qh, kh, vh = q[..., h * d:(h + 1) * d], k[..., j * d:(j + 1) * d], v[..., j * d:(j + 1) * d]
            s = qh @ kh.transpose(1, 2) / math.sqrt(d)  # (B, T, T)
            if mask is not None:
                s = s * mask
            p = torch.softmax(s, dim=-1).nan_to_num(0.0)
            outs.append(p @ vh)
            probs.append(p)
        return self.W_o(torch.cat(outs, dim=-1)), torch.stack(probs, dim=1)
