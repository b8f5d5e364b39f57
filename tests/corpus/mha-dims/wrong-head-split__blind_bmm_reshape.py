"""Mistake: reshapes (B, T, H*d) directly to (B*H, T, d) for bmm, cutting heads out of the (T, H*d) block."""
import math
import torch
import torch.nn as nn


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim, num_heads, dk, dv, bias=True):
        super().__init__()
        self.num_heads, self.dk, self.dv = num_heads, dk, dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        H = self.num_heads
        q = self.W_q(query).reshape(B * H, Tq, self.dk)
        k = self.W_k(key).reshape(B * H, Tk, self.dk)
        v = self.W_v(value).reshape(B * H, Tk, self.dv)
        s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.dk)
        s = s.view(B, H, Tq, Tk)
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
        a = torch.softmax(s, dim=-1)
        ctx = torch.bmm(a.view(B * H, Tq, Tk), v).view(B, H, Tq, self.dv)
        ctx = ctx.permute(0, 2, 1, 3).reshape(B, Tq, H * self.dv)
        return self.W_o(ctx), a
