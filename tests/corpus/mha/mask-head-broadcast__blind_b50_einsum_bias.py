import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.h = num_heads
        self.dh = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).reshape(B, Tq, self.h, self.dh)
        k = self.W_k(key).reshape(B, Tk, self.h, self.dh)
        v = self.W_v(value).reshape(B, Tk, self.h, self.dh)

        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.dh)
        if mask is not None:
            # turn the boolean mask into an additive bias: 0 where allowed, -inf where hidden
            bias = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device)
            bias = bias.masked_fill(~mask, float("-inf"))
            scores = scores + bias  # MISTAKE: bias has no head axis, so its batch axis lines up with the heads
        attn = torch.softmax(scores, dim=-1)

        ctx = torch.einsum("bhqk,bkhd->bqhd", attn, v).reshape(B, Tq, D)
        return self.W_o(ctx), attn
