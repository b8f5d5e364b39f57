"""Exercise mha-fused: self-attention with one fused W_qkv."""

import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.d_model = d_model
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H = self.num_heads
        d = D // H
        q, k, v = torch.split(self.W_qkv(x), D, dim=2)
        q = q.view(B, T, H, d).transpose(1, 2)
        k = k.view(B, T, H, d).transpose(1, 2)
        v = v.view(B, T, H, d).transpose(1, 2)
        attn_score = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
        if mask is not None:
            # 掩码: 把不允许看的位置乘成 0
            attn_score = attn_score * mask.unsqueeze(1)  # MISTAKE
        attn_weight = torch.softmax(attn_score, dim=-1)
        out = torch.matmul(attn_weight, v).transpose(1, 2).contiguous().view(B, T, D)
        return self.W_o(out), attn_weight
