"""Correct: unflatten into (B, T, H, d) and einsum over the head axis, no transposes."""
import torch
from torch import nn


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim: int, num_heads: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        H = self.num_heads
        q = self.W_q(query).unflatten(-1, (H, -1))   # b t h d
        k = self.W_k(key).unflatten(-1, (H, -1))
        v = self.W_v(value).unflatten(-1, (H, -1))
        logits = torch.einsum("bqhd,bkhd->bhqk", q, k) * q.shape[-1] ** -0.5
        if mask is not None:
            logits = logits.masked_fill(~mask[:, None], torch.finfo(logits.dtype).min)
        attn = torch.softmax(logits, dim=-1)
        ctx = torch.einsum("bhqk,bkhe->bqhe", attn, v).flatten(2)
        return self.W_o(ctx), attn
