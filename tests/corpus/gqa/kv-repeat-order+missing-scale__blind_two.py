"""Two mistakes: kv heads tiled with .repeat (0,1,0,1) instead of repeat_interleave, and no 1/sqrt(d) on the scores."""
import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.H, self.Hkv = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self.W_q(x).view(B, T, self.H, self.d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.Hkv, self.d).transpose(1, 2).repeat(1, self.H // self.Hkv, 1, 1)
        v = self.W_v(x).view(B, T, self.Hkv, self.d).transpose(1, 2).repeat(1, self.H // self.Hkv, 1, 1)
        s = q @ k.transpose(-2, -1)
        if mask is not None:
            s = s.masked_fill(~mask[:, None], float("-inf"))
        p = s.softmax(-1)
        return self.W_o((p @ v).transpose(1, 2).reshape(B, T, D)), p
