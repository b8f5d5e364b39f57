"""Fused multi-head self-attention with GPT-2's (nanoGPT's) layer names: c_attn and c_proj."""

import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be a multiple of num_heads"
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        # one matmul makes q, k and v: its output is [q | k | v], each d_model wide
        self.c_attn = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.c_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        """x (B, T, D); mask bool (B, T, T) or (B, 1, T), True = may attend.

        Returns out (B, T, D) and weights (B, H, T, T).
        """
        B, T, D = x.shape
        H, d = self.num_heads, self.d_head

        # cut the D-wide blocks first, then the heads inside each block (not view(B, T, H, 3, d): that
        # would give head h the features of a per-head interleaved layout)
        q, k, v = self.c_attn(x).split(D, dim=-1)  # 3 x (B, T, D)
        q = q.view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
        k = k.view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
        v = v.view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)

        scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, H, T, T); d is the head dim, not D
        if mask is not None:
            # the mask has no head axis: add one, or B would line up with H when broadcasting
            mask = mask.unsqueeze(1)  # (B, 1, T or 1, T)
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, H, T, T)
        if mask is not None:
            # a query that sees no key: zeros rather than NaN, as PyTorch's SDPA does
            weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)

        y = weights @ v  # (B, H, T, d)
        y = y.transpose(1, 2).reshape(B, T, D)  # (B, T, H, d) -> (B, T, D): head h back at [h*d, (h+1)*d)
        return self.c_proj(y), weights
