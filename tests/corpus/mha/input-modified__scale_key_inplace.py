"""Writes into the caller's key (key.mul_(3).add_(1)) after projecting it: in self-attention that changes query and value too."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.H = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        d = D // self.H
        k = self.W_k(key).view(B, -1, self.H, d).permute(0, 2, 1, 3)
        with torch.no_grad():
            key.mul_(3.0).add_(1.0)  # left changed for the caller
        q = self.W_q(query).view(B, Tq, self.H, d).permute(0, 2, 1, 3)
        v = self.W_v(value).view(B, -1, self.H, d).permute(0, 2, 1, 3)
        s = (q / math.sqrt(d)) @ k.transpose(-1, -2)
        if mask is not None:
            s = torch.where(mask.unsqueeze(1), s, torch.finfo(s.dtype).min)
        w = s.softmax(-1)
        return self.W_o((w @ v).permute(0, 2, 1, 3).reshape(B, Tq, D)), w
