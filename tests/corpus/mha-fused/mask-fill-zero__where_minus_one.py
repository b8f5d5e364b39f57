"""Hidden keys get a score of -1.0 via torch.where instead of -inf, so they keep weight."""
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
        q, k, v = self.W_qkv(x).split(D, dim=2)
        q = q.view(B, T, H, D // H).transpose(1, 2)
        k = k.view(B, T, H, D // H).transpose(1, 2)
        v = v.view(B, T, H, D // H).transpose(1, 2)
        s = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(D // H)
        if mask is not None:
            s = torch.where(mask.unsqueeze(1), s, torch.full_like(s, -1.0))
        w = torch.softmax(s, dim=-1)
        out = torch.matmul(w, v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(out), w
