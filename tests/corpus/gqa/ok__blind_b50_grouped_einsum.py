import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv = num_kv_heads
        self.group = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.scale = self.head_dim ** -0.5
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        n, g, hd = self.n_kv, self.group, self.head_dim
        # query head h = kv * g + j, so splitting H as (n, g) keeps each group together
        q = self.W_q(x).view(B, T, n, g, hd).permute(0, 2, 3, 1, 4)  # (B, n, g, T, hd)
        k = self.W_k(x).view(B, T, n, hd).transpose(1, 2)  # (B, n, T, hd)
        v = self.W_v(x).view(B, T, n, hd).transpose(1, 2)

        s = torch.einsum("bngtd,bnsd->bngts", q, k) * self.scale
        if mask is not None:
            s = torch.where(mask[:, None, None], s, torch.finfo(s.dtype).min)
        p = torch.softmax(s, dim=-1)

        y = torch.einsum("bngts,bnsd->bngtd", p, v)  # (B, n, g, T, hd)
        y = y.permute(0, 3, 1, 2, 4).reshape(B, T, D)
        return self.W_o(y), p.reshape(B, self.n_heads, T, T)
