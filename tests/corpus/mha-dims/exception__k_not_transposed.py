"""mha-dims with k not transposed: q @ k raises unless the sizes happen to line up (issue 18, point 1: once named projection-before-merge "to inf")."""

import math

import torch
from torch import nn


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim: int, num_heads: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.num_heads, self.dk, self.dv = num_heads, dk, dv
        # the head widths are given, not derived from dim: num_heads * dk need not equal dim
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        """query (B, Tq, dim); key, value (B, Tk, dim); mask bool (B, Tq, Tk) or (B, 1, Tk), True = may attend.

        Returns out (B, Tq, dim) and weights (B, H, Tq, Tk).
        """
        B, Tq, _ = query.shape
        Tk = key.size(1)
        H, dk, dv = self.num_heads, self.dk, self.dv

        # head h owns features [h*dk, (h+1)*dk) of q and k, and [h*dv, (h+1)*dv) of v
        q = self.W_q(query).view(B, Tq, H, dk).transpose(1, 2)  # (B, H, Tq, dk)
        k = self.W_k(key).view(B, Tk, H, dk).transpose(1, 2)  # (B, H, Tk, dk)
        v = self.W_v(value).view(B, Tk, H, dv).transpose(1, 2)  # (B, H, Tk, dv)

        scores = q @ k / math.sqrt(dk)  # (B, H, Tq, Tk); dk, not dv nor dim
        if mask is not None:
            # the mask has no head axis: add one, or B would line up with H when broadcasting
            mask = mask.unsqueeze(1)  # (B, 1, Tq or 1, Tk)
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, H, Tq, Tk)
        if mask is not None:
            # a query that sees no key: zeros rather than NaN, as PyTorch's SDPA does
            weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)

        y = weights @ v  # (B, H, Tq, dv)
        # merge: H back next to dv before flattening, so head h returns to features [h*dv, (h+1)*dv)
        y = y.transpose(1, 2).reshape(B, Tq, H * dv)  # (B, Tq, H, dv) -> (B, Tq, H*dv)
        return self.W_o(y), weights  # (B, Tq, dim)
