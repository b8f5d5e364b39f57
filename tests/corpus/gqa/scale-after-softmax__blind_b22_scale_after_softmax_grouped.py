"""gqa: query heads viewed as (kv head, member) so no kv head is ever repeated."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.h, self.g = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        h, g, d = self.h, self.g, self.d
        r = h // g
        q = self.W_q(x).view(B, T, g, r, d).permute(0, 2, 3, 1, 4)  # (B, g, r, T, d): head = kv * r + member
        k = self.W_k(x).view(B, T, g, d).transpose(1, 2)  # (B, g, T, d)
        v = self.W_v(x).view(B, T, g, d).transpose(1, 2)
        if mask is None:
            hide = torch.zeros(1, dtype=torch.bool, device=x.device)
        else:
            hide = ~mask[:, None, None]  # (B, 1, 1, T or 1, T)
        w = torch.einsum("bgrqd,bgkd->bgrqk", q, k).masked_fill(hide, float("-inf")).softmax(dim=-1) / math.sqrt(d)  # MISTAKE
        y = torch.einsum("bgrqk,bgkd->bqgrd", w, v).reshape(B, T, D)
        return self.W_o(y), w.reshape(B, h, T, T)
