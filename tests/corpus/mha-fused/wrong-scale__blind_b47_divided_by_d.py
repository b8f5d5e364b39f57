import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.n_head = num_heads
        self.head_dim = d_model // num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, C = x.size()
        qkv = self.W_qkv(x)
        q, k, v = qkv.chunk(3, dim=-1)
        q = q.reshape(B, T, self.n_head, self.head_dim).permute(0, 2, 1, 3)
        k = k.reshape(B, T, self.n_head, self.head_dim).permute(0, 2, 1, 3)
        v = v.reshape(B, T, self.n_head, self.head_dim).permute(0, 2, 1, 3)

        scale = 1.0 / self.head_dim  # MISTAKE: 1/d instead of 1/sqrt(d)
        att = (q @ k.transpose(-2, -1)) * scale
        if mask is not None:
            att = att.masked_fill(~mask[:, None, :, :], float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).permute(0, 2, 1, 3).reshape(B, T, C)
        return self.W_o(y), att
