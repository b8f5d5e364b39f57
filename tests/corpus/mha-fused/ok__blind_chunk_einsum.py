"""Correct: chunk the fused output in three, rearrange heads with einsum, additive -inf bias from the mask."""
import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.n_head = num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, C = x.shape
        hd = C // self.n_head
        q, k, v = (t.reshape(B, T, self.n_head, hd) for t in self.W_qkv(x).chunk(3, dim=-1))
        att = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(hd)
        if mask is not None:
            neg = torch.zeros_like(mask, dtype=att.dtype).masked_fill(~mask, float("-inf"))
            att = att + neg.unsqueeze(1)
        att = att - att.max(dim=-1, keepdim=True).values
        att = att.exp()
        att = att / att.sum(dim=-1, keepdim=True)
        y = torch.einsum("bhts,bshd->bthd", att, v).reshape(B, T, C)
        return self.W_o(y), att
