"""Mistake: scales by sqrt(dim / num_heads), the usual head size, which is not dk here."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim, num_heads, dk, dv, bias=True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim / num_heads
        self.dk, self.dv = dk, dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.size(1)
        H = self.num_heads
        q = self.W_q(query).view(B, Tq, H, self.dk).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, H, self.dk).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, H, self.dv).transpose(1, 2)
        scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, :, :], float("-inf"))
        w = F.softmax(scores, dim=-1)
        y = (w @ v).transpose(1, 2).contiguous().view(B, Tq, H * self.dv)
        return self.W_o(y), w
