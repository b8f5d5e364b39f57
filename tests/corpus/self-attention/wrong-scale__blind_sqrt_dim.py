"""Mistake: scales by sqrt of the model/input width (dim) rather than sqrt(dk)."""
import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, dim, dk, dv, bias=True):
        super().__init__()
        self.dim = dim
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def forward(self, x, mask=None):
        B, T, C = x.shape
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        att = (q @ k.transpose(-2, -1)) * (1.0 / C ** 0.5)
        if mask is not None:
            att = att.masked_fill(mask.logical_not(), float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = att @ v
        return y, att
