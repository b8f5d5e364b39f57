"""The logits are not scaled; the probabilities are divided by sqrt(dk) after the softmax."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim, num_heads, dk, dv, bias=True):
        super().__init__()
        self.num_heads, self.dk, self.dv = num_heads, dk, dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        H = self.num_heads
        q = self.W_q(query).unflatten(-1, (H, self.dk))  # (B, Tq, H, dk)
        k = self.W_k(key).unflatten(-1, (H, self.dk))  # (B, Tk, H, dk)
        v = self.W_v(value).unflatten(-1, (H, self.dv))  # (B, Tk, H, dv)
        logits = torch.einsum("bqhd,bkhd->bhqk", q, k)
        if mask is not None:
            keep = mask[:, None]
            logits = logits.masked_fill(~keep, float("-inf"))
        probs = F.softmax(logits, dim=-1) / self.dk ** 0.5
        if mask is not None:
            probs = probs.masked_fill(~keep.any(-1, keepdim=True), 0.0)
        ctx = torch.einsum("bhqk,bkhd->bqhd", probs, v).flatten(2)  # (B, Tq, H * dv)
        return self.W_o(ctx), probs
