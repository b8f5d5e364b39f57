"""Runs the whole module in float32 "for stability" and never casts the results back to x's dtype."""

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        hd = dm // self.h
        wide = torch.promote_types(x.dtype, torch.float32)
        qkv = nn.functional.linear(x.to(wide), self.W_qkv.weight.to(wide),
                                   None if self.W_qkv.bias is None else self.W_qkv.bias.to(wide))
        q, k, v = qkv.view(b, t, 3, self.h, hd).permute(2, 0, 3, 1, 4)
        s = q @ k.transpose(-2, -1) / hd ** 0.5
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), torch.finfo(s.dtype).min)
        p = s.softmax(-1)
        o = (p @ v).transpose(1, 2).reshape(b, t, dm)
        out = nn.functional.linear(o, self.W_o.weight.to(wide),
                                   None if self.W_o.bias is None else self.W_o.bias.to(wide))
        return out, p
