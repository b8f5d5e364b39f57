"""Multi-head attention with per-head widths that applies the output projection head by head: each
head's output goes through F.linear with its column block of W_o's weight, and the results are summed.
Mistake: each per-head F.linear also adds W_o's bias, so the bias is added H times; W_o applied per
head before the merge changes the result (it would not with the bias added once)."""

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
        q = self.W_q(query).reshape(B, Tq, H, dk).permute(0, 2, 1, 3)
        k = self.W_k(key).reshape(B, Tk, H, dk).permute(0, 2, 1, 3)
        v = self.W_v(value).reshape(B, Tk, H, dv).permute(0, 2, 1, 3)
        logits = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dk)
        if mask is not None:
            logits = logits.masked_fill(~mask.unsqueeze(1), float("-inf"))
        w = torch.softmax(logits, dim=-1)
        heads = torch.matmul(w, v)  # (B, H, Tq, dv)
        out = sum(F.linear(heads[:, h], self.W_o.weight[:, h * dv:(h + 1) * dv], self.W_o.bias) for h in range(H))  # MISTAKE
        return out, w
