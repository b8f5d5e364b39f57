import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.h = num_heads
        self.hkv = num_kv_heads
        self.hd = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        g = self.h // self.hkv  # query heads per kv head
        # no repeat at all: query head h = n * g + j belongs to group n, so view the query heads as (hkv, g)
        q = self.W_q(x).view(B, T, self.hkv, g, self.hd)
        k = self.W_k(x).view(B, T, self.hkv, self.hd)
        v = self.W_v(x).view(B, T, self.hkv, self.hd)

        scores = torch.einsum("bqngd,bknd->bngqk", q, k) * self.hd ** -0.5  # (B, hkv, g, T, T)
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, None], float("-inf"))
        w = scores.softmax(dim=-1)
        y = torch.einsum("bngqk,bknd->bqngd", w, v).reshape(B, T, D)
        return self.W_o(y), w.reshape(B, self.h, T, T)
