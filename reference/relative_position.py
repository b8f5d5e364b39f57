"""Self-attention with learned relative-position keys (Shaw et al., 2018): a model answer."""

import math

import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be a multiple of num_heads"
        self.num_heads, self.max_distance = num_heads, max_distance
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        # one learned key per offset -max_distance .. max_distance, shared by all heads
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.d_head)

    def forward(self, x, mask=None):
        """x (B, T, D); mask bool (B, T, T) or (B, 1, T), True = may attend.

        Returns out (B, T, D) and weights (B, H, T, T).
        """
        B, T, D = x.shape
        H, d, m = self.num_heads, self.d_head, self.max_distance

        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
        k = self.W_k(x).view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
        v = self.W_v(x).view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)

        # key j's offset from query i is j - i (a past key is negative); beyond max_distance every offset
        # shares the last embedding, which is what lets the layer run on sequences longer than it saw
        pos = torch.arange(T, device=x.device)
        offset = (pos[None, :] - pos[:, None]).clamp(-m, m)  # (T, T): [i, j] = j - i, clipped
        r = self.rel_k(offset + m)  # (T, T, d)

        content = q @ k.transpose(-2, -1)  # (B, H, T, T)
        position = torch.einsum("bhid,ijd->bhij", q, r)  # (B, H, T, T): q_i . r_ij
        scores = (content + position) / math.sqrt(d)  # both terms are dot products of d features
        if mask is not None:
            # the mask has no head axis: add one, or B would line up with H when broadcasting
            mask = mask.unsqueeze(1)  # (B, 1, T or 1, T)
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, H, T, T)
        if mask is not None:
            # a query that sees no key: zeros rather than NaN, as PyTorch's SDPA does
            weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)

        y = weights @ v  # (B, H, T, d): no relative term on the values (key side only)
        y = y.transpose(1, 2).reshape(B, T, D)  # (B, T, H, d) -> (B, T, D): head h back at [h*d, (h+1)*d)
        return self.W_o(y), weights
