"""Exercise mha-dims: per-head widths dk and dv (split/stack instead of view/transpose)."""

import math

import torch
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
        # each split(...) chunk is one head's features [h*w, (h+1)*w); stack puts heads on dim 1
        q = torch.stack(self.W_q(query).split(self.dk, dim=-1), dim=1)  # (B, H, Tq, dk)
        k = torch.stack(self.W_k(key).split(self.dk, dim=-1), dim=1)  # (B, H, Tk, dk)
        v = torch.stack(self.W_v(value).split(self.dv, dim=-1), dim=1)  # (B, H, Tk, dv)
        scores = q.matmul(k.transpose(-1, -2)).div(math.sqrt(self.dk))
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        w = torch.softmax(scores, dim=-1)
        y = torch.cat(w.matmul(v).unbind(dim=1), dim=-1)  # (B, Tq, H*dv), head h at [h*dv, (h+1)*dv)
        return self.W_o(y), w
