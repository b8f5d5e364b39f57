import math

import torch
from torch import nn


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim: int, num_heads: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.h, self.dk, self.dv = num_heads, dk, dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).reshape(B, Tq, self.h, self.dk).permute(0, 2, 1, 3)  # (B, H, Tq, dk)
        k = self.W_k(key).reshape(B, Tk, self.h, self.dk).permute(0, 2, 3, 1)    # (B, H, dk, Tk)
        v = self.W_v(value).reshape(B, Tk, self.h, self.dv).permute(0, 2, 1, 3)  # (B, H, Tk, dv)

        e = (q @ k) / math.sqrt(self.dk)
        if mask is not None:
            e = e.masked_fill(~mask.unsqueeze(1), float("-inf"))
        a = torch.softmax(e, dim=-1)
        ctx = a @ v  # (B, H, Tq, dv)
        ctx = ctx.permute(0, 2, 3, 1).reshape(B, Tq, self.h * self.dv)  # MISTAKE: (Tq, dv, H) order, head h not at [h*dv, (h+1)*dv)
        return self.W_o(ctx), a
