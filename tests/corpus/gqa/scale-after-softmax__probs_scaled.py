"""Normalises the raw scores, then multiplies the probabilities by head_dim ** -0.5."""
import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.nh, self.nkv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.scale = self.hd ** -0.5
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self.W_q(x).unflatten(-1, (self.nh, self.hd)).transpose(1, 2)
        k = self.W_k(x).unflatten(-1, (self.nkv, self.hd)).transpose(1, 2)
        v = self.W_v(x).unflatten(-1, (self.nkv, self.hd)).transpose(1, 2)
        k = k.repeat_interleave(self.nh // self.nkv, dim=1)
        v = v.repeat_interleave(self.nh // self.nkv, dim=1)
        logits = torch.einsum("bhid,bhjd->bhij", q, k)
        if mask is not None:
            logits = logits.masked_fill(~mask[:, None], float("-inf"))
        probs = torch.softmax(logits, dim=-1) * self.scale
        out = torch.einsum("bhij,bhjd->bhid", probs, v)
        return self.W_o(out.transpose(1, 2).flatten(2)), probs
