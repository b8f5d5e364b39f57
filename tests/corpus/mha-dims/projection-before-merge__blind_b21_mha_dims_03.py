"""Exercise mha-dims: per-head widths dk and dv; output projection done head by head."""

import math

import torch
import torch.nn.functional as F
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
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        H, dk, dv = self.num_heads, self.dk, self.dv
        q = self.W_q(query).reshape(B, Tq, H, dk).transpose(1, 2)
        k = self.W_k(key).reshape(B, Tk, H, dk).transpose(1, 2)
        v = self.W_v(value).reshape(B, Tk, H, dv).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(dk)
        if mask is not None:
            s = s.masked_fill(mask.unsqueeze(1) == False, torch.finfo(s.dtype).min)  # noqa: E712
        a = torch.softmax(s, dim=-1)
        heads = a @ v  # (B, H, Tq, dv)
        # W_o is linear, so project each head with its column block and add the pieces up
        W, b = self.W_o.weight, self.W_o.bias
        out = 0
        for h in range(H):
            out = out + F.linear(heads[:, h], W[:, h * dv : (h + 1) * dv], b)  # MISTAKE
        return out, a
