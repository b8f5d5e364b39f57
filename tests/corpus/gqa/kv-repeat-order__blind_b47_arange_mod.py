import math

import torch
from torch import nn


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
        q = self.W_q(x).unflatten(-1, (self.H, self.d)).transpose(1, 2)    # (B, H, T, d)
        k = self.W_k(x).unflatten(-1, (self.Hkv, self.d)).transpose(1, 2)  # (B, Hkv, T, d)
        v = self.W_v(x).unflatten(-1, (self.Hkv, self.d)).transpose(1, 2)

        kv_of_head = torch.arange(self.H, device=x.device) % self.Hkv  # MISTAKE: tiles 0,1,0,1 instead of h // group
        k = k[:, kv_of_head]  # (B, H, T, d)
        v = v[:, kv_of_head]

        s = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(self.d)
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
        p = torch.softmax(s, dim=-1)
        o = torch.einsum("bhij,bhjd->bihd", p, v).reshape(B, T, D)
        return self.W_o(o), p
