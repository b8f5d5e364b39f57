"""Correct: heads folded into the batch for bmm, the mask as an additive bias of finfo.min."""

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.n_head = num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, C = x.shape
        H = self.n_head
        hs = C // H

        def heads(t):  # (B, T, C) -> (B*H, T, hs)
            return t.view(B, T, H, hs).transpose(1, 2).reshape(B * H, T, hs)

        q, k, v = map(heads, self.W_qkv(x).split(C, dim=2))
        att = torch.bmm(q, k.transpose(1, 2)) * (1.0 / hs ** 0.5)
        if mask is not None:
            add = torch.zeros(mask.shape, dtype=att.dtype, device=att.device)
            add = add.masked_fill(~mask, torch.finfo(att.dtype).min)
            att = att + add.repeat_interleave(H, dim=0)
        att = att.softmax(dim=-1)
        y = torch.bmm(att, v).view(B, H, T, hs).transpose(1, 2).reshape(B, T, C)
        return self.W_o(y), att.view(B, H, T, T)
