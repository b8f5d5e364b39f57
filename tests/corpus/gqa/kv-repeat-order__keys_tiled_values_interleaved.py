"""GQA half-fixed: keys tiled with repeat, values interleaved with repeat_interleave (issue 18, point 3)."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be a multiple of num_heads"
        assert num_heads % num_kv_heads == 0, "num_heads must be a multiple of num_kv_heads"
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        # fewer kv heads: keys and values are num_kv_heads * d wide, a smaller KV cache
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_head, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_head, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        """x (B, T, D); mask bool (B, T, T) or (B, 1, T), True = may attend.

        Returns out (B, T, D) and weights (B, H, T, T).
        """
        B, T, D = x.shape
        H, Hkv, d = self.num_heads, self.num_kv_heads, self.d_head

        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
        k = self.W_k(x).view(B, T, Hkv, d).transpose(1, 2)  # (B, Hkv, T, d)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)  # (B, Hkv, T, d)

        # query head h reads kv head h // group: each kv head serves `group` consecutive query heads,
        # so interleave (0, 0, 1, 1), not tile (0, 1, 0, 1) as .repeat would
        group = H // Hkv
        k = k.repeat(1, group, 1, 1)  # (B, H, T, d)
        v = v.repeat_interleave(group, dim=1)  # (B, H, T, d)

        scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, H, T, T); d is the head dim
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
        return self.W_o(y), weights
