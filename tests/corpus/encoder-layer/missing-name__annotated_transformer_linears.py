"""An encoder layer whose MultiHeadAttention is laid out as the Annotated Transformer does: self.linears."""

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


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def attend(self, x, mask):
        return self.self_attn(x, x, x, mask)[0]  # (B, T, D); the weights are not needed here

    def feed_forward(self, x):
        return self.ff2(torch.relu(self.ff1(x)))  # (B, T, d_ff) -> (B, T, D)

    def forward(self, x, mask=None):
        """x (B, T, D); mask bool (B, T, T) or (B, 1, T), True = may attend. Returns (B, T, D)."""
        if self.norm_first:
            # pre-LN: each sub-layer reads a normalised copy; the residual stream itself is never normalised
            x = x + self.attend(self.norm1(x), mask)
            x = x + self.feed_forward(self.norm2(x))
        else:
            # post-LN (the original Transformer): add the sub-layer's output to its input, then normalise the sum
            x = self.norm1(x + self.attend(x, mask))
            x = self.norm2(x + self.feed_forward(x))
        return x
