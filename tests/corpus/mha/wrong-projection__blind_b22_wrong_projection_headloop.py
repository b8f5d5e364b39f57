"""mha: per-head loop over row slices of the projection weights (F.linear)."""

import math

import torch
import torch.nn.functional as F
from torch import nn


def _head_proj(lin, x, lo, hi):
    b = None if lin.bias is None else lin.bias[lo:hi]
    return F.linear(x, lin.weight[lo:hi], b)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        d = self.d_k
        outs, ws = [], []
        for h in range(self.num_heads):
            lo, hi = h * d, (h + 1) * d
            qh = _head_proj(self.W_q, query, lo, hi)  # (B, Tq, d)
            kh = _head_proj(self.W_k, key, lo, hi)  # (B, Tk, d)
            vh = _head_proj(self.W_k, value, lo, hi)  # MISTAKE
            s = qh @ kh.transpose(1, 2) / math.sqrt(d)  # (B, Tq, Tk): one head, the mask fits as it is
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            w = torch.softmax(s, dim=-1)
            outs.append(w @ vh)
            ws.append(w)
        y = torch.cat(outs, dim=-1)  # head h at features [h*d, (h+1)*d)
        return self.W_o(y), torch.stack(ws, dim=1)
