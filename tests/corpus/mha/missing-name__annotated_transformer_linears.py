"""Multi-head attention laid out as the Annotated Transformer does: self.linears, four clones of one layer."""

import copy

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be a multiple of num_heads"
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.linears = nn.ModuleList([copy.deepcopy(nn.Linear(d_model, d_model, bias=bias)) for _ in range(4)])

    def forward(self, query, key, value, mask=None):
        """query (B, Tq, D); key, value (B, Tk, D); mask bool (B, Tq, Tk) or (B, 1, Tk), True = may attend.

        Returns out (B, Tq, D) and weights (B, H, Tq, Tk).
        """
        B, Tq, D = query.shape
        Tk = key.size(1)
        H, d = self.num_heads, self.d_head

        # split: head h owns features [h*d, (h+1)*d) of every token, so view (.., H, d) and then move H forward
        q = self.linears[0](query).view(B, Tq, H, d).transpose(1, 2)  # (B, H, Tq, d)
        k = self.linears[1](key).view(B, Tk, H, d).transpose(1, 2)  # (B, H, Tk, d)
        v = self.linears[2](value).view(B, Tk, H, d).transpose(1, 2)  # (B, H, Tk, d)

        scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, H, Tq, Tk); d is the head dim, not D
        if mask is not None:
            # the mask has no head axis: add one, or B would line up with H when broadcasting
            mask = mask.unsqueeze(1)  # (B, 1, Tq or 1, Tk)
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, H, Tq, Tk)
        if mask is not None:
            # a query that sees no key: zeros rather than NaN, as PyTorch's SDPA does
            weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)

        y = weights @ v  # (B, H, Tq, d)
        # merge: move H back next to d before flattening, so head h returns to features [h*d, (h+1)*d)
        y = y.transpose(1, 2).reshape(B, Tq, D)  # (B, Tq, H, d) -> (B, Tq, D)
        return self.linears[3](y), weights
