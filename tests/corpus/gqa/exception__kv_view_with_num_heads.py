"""Views the narrow keys as (B, T, H, d), with the query head count: the sizes do not fit, view raises."""

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.H, self.Hkv, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self.W_q(x).view(B, T, self.H, self.d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.H, self.d).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.H, self.d).transpose(1, 2)
        att = (q @ k.transpose(-1, -2)) / self.d ** 0.5
        if mask is not None:
            att = att.masked_fill(~mask.unsqueeze(1), torch.finfo(att.dtype).min)
        att = att.softmax(-1)
        return self.W_o((att @ v).transpose(1, 2).reshape(B, T, D)), att
