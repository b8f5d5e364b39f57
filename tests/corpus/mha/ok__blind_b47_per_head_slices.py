import math

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    """Multi-head attention written head by head: each head uses its own row block of every projection."""

    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        assert d_model % num_heads == 0
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    @staticmethod
    def _rows(layer, lo, hi):
        w = layer.weight[lo:hi]
        b = None if layer.bias is None else layer.bias[lo:hi]
        return w, b

    def forward(self, query, key, value, mask=None):
        d = self.head_dim
        out = None
        all_weights = []
        for h in range(self.num_heads):
            lo, hi = h * d, (h + 1) * d
            q_h = F.linear(query, *self._rows(self.W_q, lo, hi))  # (B, Tq, d)
            k_h = F.linear(key, *self._rows(self.W_k, lo, hi))    # (B, Tk, d)
            v_h = F.linear(value, *self._rows(self.W_v, lo, hi))  # (B, Tk, d)

            s = torch.bmm(q_h, k_h.transpose(1, 2)) / math.sqrt(d)  # (B, Tq, Tk)
            if mask is not None:
                # one head at a time: the (B, Tq, Tk) / (B, 1, Tk) mask lines up as it is
                s = s.masked_fill(~mask, float("-inf"))
            p = torch.softmax(s, dim=-1)
            all_weights.append(p)

            # W_o's column block for this head, summed over the heads: the same as merging first
            contrib = torch.bmm(p, v_h) @ self.W_o.weight[:, lo:hi].T  # (B, Tq, D)
            out = contrib if out is None else out + contrib
        if self.W_o.bias is not None:
            out = out + self.W_o.bias
        return out, torch.stack(all_weights, dim=1)
