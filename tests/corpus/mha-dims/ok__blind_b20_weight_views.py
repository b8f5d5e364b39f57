"""Multi-head attention with per-head widths that never reshapes activations: each projection's weight
is viewed per head, (H, dk, dim) for W_q/W_k and (H, dv, dim) for W_v, and einsum projects straight
into (B, H, T, width); W_o's weight is viewed as (dim, H, dv) and contracted with the head outputs.
Correct (unusual style: per-head weight views instead of splitting/merging activations)."""

import math

import torch
from torch import nn


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim: int, num_heads: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.H, self.dk, self.dv = num_heads, dk, dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def _proj(self, lin, x, width):
        w = lin.weight.view(self.H, width, -1)
        y = torch.einsum("btc,hwc->bhtw", x, w)
        if lin.bias is not None:
            y = y + lin.bias.view(1, self.H, 1, width)
        return y

    def forward(self, query, key, value, mask=None):
        q = self._proj(self.W_q, query, self.dk)
        k = self._proj(self.W_k, key, self.dk)
        v = self._proj(self.W_v, value, self.dv)
        s = torch.einsum("bhqc,bhkc->bhqk", q, k) / math.sqrt(self.dk)
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
        a = torch.softmax(s, dim=-1)
        y = torch.einsum("bhqk,bhkv->bhqv", a, v)
        out = torch.einsum("bhqv,ohv->bqo", y, self.W_o.weight.view(-1, self.H, self.dv))
        if self.W_o.bias is not None:
            out = out + self.W_o.bias
        return out, a
