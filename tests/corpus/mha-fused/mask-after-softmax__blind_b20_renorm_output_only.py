"""Fused self-attention that runs the softmax first and then multiplies the probabilities by the mask,
renormalising only when forming the output (out = (P*m) @ v / rowsum(P*m)). The output is right, but
Mistake: the mask is applied to the probabilities, and the returned weights are the masked,
un-renormalised ones, whose rows no longer sum to 1."""

import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H = self.num_heads
        d = D // H
        q, k, v = self.W_qkv(x).split(D, dim=2)
        q = q.reshape(B, T, H, d).transpose(1, 2)
        k = k.reshape(B, T, H, d).transpose(1, 2)
        v = v.reshape(B, T, H, d).transpose(1, 2)
        p = torch.softmax(q @ k.transpose(2, 3) / math.sqrt(d), dim=-1)
        if mask is not None:
            p = p * mask.unsqueeze(1)  # MISTAKE
        y = (p @ v) / p.sum(dim=-1, keepdim=True)
        y = y.transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), p
