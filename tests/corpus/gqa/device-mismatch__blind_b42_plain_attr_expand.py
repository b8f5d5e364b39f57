"""GQA that expands kv heads with a one-hot (H, Hkv) matrix stored as a plain tensor attribute in __init__ (not a buffer), so module.to(device) never moves it."""
import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)
        group = num_heads // num_kv_heads
        kv_of = torch.arange(num_heads) // group
        # plain attribute: stays on the CPU whatever .to() the module gets
        self.expand = (kv_of[:, None] == torch.arange(num_kv_heads)[None, :]).double()

    def forward(self, x, mask=None):
        B, T, _ = x.shape
        q = self.W_q(x).view(B, T, self.num_heads, self.d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.num_kv_heads, self.d).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.num_kv_heads, self.d).transpose(1, 2)
        E = self.expand.to(x.dtype)
        k = torch.einsum("hg,bgtd->bhtd", E, k)
        v = torch.einsum("hg,bgtd->bhtd", E, v)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, T, self.d_model)
        return self.W_o(out), weights
