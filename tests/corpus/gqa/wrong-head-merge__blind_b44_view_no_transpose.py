import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.H = num_heads
        self.Hkv = num_kv_heads
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self.W_q(x).view(B, T, self.H, self.d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.Hkv, self.d).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.Hkv, self.d).transpose(1, 2)
        group = self.H // self.Hkv
        k = torch.repeat_interleave(k, group, dim=1)
        v = torch.repeat_interleave(v, group, dim=1)
        att = (q @ k.transpose(-2, -1)) * self.d ** -0.5
        if mask is not None:
            att = att.masked_fill(mask[:, None] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        out = att @ v
        out = out.contiguous().view(B, T, D)  # MISTAKE
        return self.W_o(out), att
