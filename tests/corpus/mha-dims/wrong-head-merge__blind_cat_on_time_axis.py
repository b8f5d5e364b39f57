"""Mistake: per-head loop concatenates the head outputs along the time axis, then views back to (B, Tq, H*dv)."""
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

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        qs = self.W_q(query).split(self.dk, dim=-1)
        ks = self.W_k(key).split(self.dk, dim=-1)
        vs = self.W_v(value).split(self.dv, dim=-1)
        outs, ws = [], []
        for qh, kh, vh in zip(qs, ks, vs):
            s = qh @ kh.transpose(-2, -1) / math.sqrt(self.dk)
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            w = torch.softmax(s, dim=-1)
            outs.append(w @ vh)
            ws.append(w)
        merged = torch.cat(outs, dim=1).view(B, Tq, self.H * self.dv)
        return self.W_o(merged), torch.stack(ws, dim=1)
