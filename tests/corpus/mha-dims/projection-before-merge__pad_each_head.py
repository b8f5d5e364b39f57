"""Mistake: zero-pads each head's output on the right to H*dv and runs W_o on it, then sums: every head goes through head 0's block."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim, num_heads, dk, dv, bias=True):
        super().__init__()
        self.H, self.dk, self.dv = num_heads, dk, dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        H = self.H
        q = self.W_q(query).unflatten(-1, (H, self.dk)).permute(0, 2, 1, 3)
        k = self.W_k(key).unflatten(-1, (H, self.dk)).permute(0, 2, 1, 3)
        v = self.W_v(value).unflatten(-1, (H, self.dv)).permute(0, 2, 1, 3)
        s = q @ k.transpose(-1, -2) * self.dk ** -0.5
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
        p = torch.softmax(s, -1)
        o = p @ v                                        # (B, H, Tq, dv)
        o = F.pad(o, (0, (H - 1) * self.dv))             # (B, H, Tq, H*dv)
        y = self.W_o(o)                                  # (B, H, Tq, dim)
        bias = self.W_o.bias if self.W_o.bias is not None else 0
        y = (y - bias).sum(dim=1) + bias
        return y, p
