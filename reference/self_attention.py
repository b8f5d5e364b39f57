"""Single-head self-attention with a query/key width dk and a value width dv: a model answer."""

import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.dk = dk
        # queries and keys only meet in a dot product, so they share a width dk; the values are what is
        # averaged and returned, so their width dv is free
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def forward(self, x, mask=None):
        """x (B, T, dim); mask bool (B, T, T) or (B, 1, T), True = may attend.

        Returns out (B, T, dv) and weights (B, T, T).
        """
        q = self.W_q(x)  # (B, T, dk)
        k = self.W_k(x)  # (B, T, dk)
        v = self.W_v(x)  # (B, T, dv)

        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk)  # (B, T, T); dk: the width of the dot product
        if mask is not None:
            # one head: the mask already lines up with the scores, no head axis to add
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, T, T)
        if mask is not None:
            # a query that sees no key: zeros rather than NaN, as PyTorch's SDPA does
            weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
        return weights @ v, weights  # (B, T, dv), (B, T, T)
