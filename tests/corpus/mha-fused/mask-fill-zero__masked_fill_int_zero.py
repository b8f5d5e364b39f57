"""masked_fill(~m, 0): an integer zero where -inf was meant."""

import torch
import torch.nn.functional as F
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.hd = d_model // num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = self.W_qkv(x).view(b, t, 3, self.h, self.hd).permute(2, 0, 3, 1, 4).unbind(0)
        s = (q @ k.transpose(-1, -2)) * self.hd ** -0.5
        if mask is not None:
            m = mask[:, None]
            s = s.masked_fill(~m, 0)
        p = F.softmax(s, dim=-1)
        if mask is not None:
            p = torch.nan_to_num(p, nan=0.0)  # a row with no visible key
        o = (p @ v).permute(0, 2, 1, 3).reshape(b, t, dm)
        return self.W_o(o), p
