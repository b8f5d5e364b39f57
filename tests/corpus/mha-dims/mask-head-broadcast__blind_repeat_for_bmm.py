"""Mistake: flattens heads into (B*H) for bmm and tiles the mask with repeat(H, 1, 1), so batch b head h gets another sequence's mask."""
import math
import torch
import torch.nn as nn


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim, num_heads, dk, dv, bias=True):
        super().__init__()
        self.H, self.dk, self.dv = num_heads, dk, dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def _split(self, t, w):
        B, T, _ = t.shape
        return t.view(B, T, self.H, w).transpose(1, 2).reshape(B * self.H, T, w)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        q, k, v = self._split(self.W_q(query), self.dk), self._split(self.W_k(key), self.dk), self._split(self.W_v(value), self.dv)
        s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.dk)       # (B*H, Tq, Tk)
        if mask is not None:
            m = mask.repeat(self.H, 1, 1)                              # (H*B, ., Tk)
            s = s.masked_fill(~m, float("-inf"))
        a = torch.softmax(s, dim=-1)
        o = torch.bmm(a, v).view(B, self.H, Tq, self.dv).transpose(1, 2).reshape(B, Tq, -1)
        return self.W_o(o), a.view(B, self.H, Tq, Tk)
