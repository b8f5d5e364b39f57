"""Builds the additive bias as mask * finfo.min, so the allowed keys get the huge negative value."""

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.nh = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        hd = D // self.nh
        q = self.W_q(query).reshape(B, Tq, self.nh, hd).permute(0, 2, 1, 3)
        k = self.W_k(key).reshape(B, Tk, self.nh, hd).permute(0, 2, 1, 3)
        v = self.W_v(value).reshape(B, Tk, self.nh, hd).permute(0, 2, 1, 3)
        logits = torch.einsum("bhqd,bhkd->bhqk", q, k) / hd**0.5
        if mask is not None:
            bias = mask[:, None].to(logits.dtype) * torch.finfo(logits.dtype).min
            logits = logits + bias
        w = F.softmax(logits, dim=-1)
        out = torch.einsum("bhqk,bhkd->bhqd", w, v).permute(0, 2, 1, 3).reshape(B, Tq, D)
        return self.W_o(out), w
