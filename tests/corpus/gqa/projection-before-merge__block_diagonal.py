"""Projects each head with only its diagonal d x d block of W_o before concatenating (the other heads' blocks are dropped)."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.H, self.Hkv = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        d, rep = self.d, self.H // self.Hkv
        q = self.W_q(x).view(B, T, self.H, d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.Hkv, d).transpose(1, 2).repeat_interleave(rep, dim=1)
        v = self.W_v(x).view(B, T, self.Hkv, d).transpose(1, 2).repeat_interleave(rep, dim=1)
        a = q @ k.transpose(-2, -1) / math.sqrt(d)
        if mask is not None:
            a = a.masked_fill(~mask.unsqueeze(1), float("-inf"))
        a = a.softmax(-1)
        ctx = a @ v                                                      # (B, H, T, d)
        outs = []
        for h in range(self.H):
            blk = self.W_o.weight[h * d:(h + 1) * d, h * d:(h + 1) * d]
            b = None if self.W_o.bias is None else self.W_o.bias[h * d:(h + 1) * d]
            outs.append(F.linear(ctx[:, h], blk, b))
        return torch.cat(outs, dim=-1), a
