"""Gets the per-head outputs from F.scaled_dot_product_attention and recomputes the weights by hand for the return value."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H = self.num_heads
        d = D // H
        q = self.W_q(query).view(B, Tq, H, d).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, H, d).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, H, d).transpose(1, 2)
        m = mask.unsqueeze(1) if mask is not None else None
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        if m is not None:
            scores = scores.masked_fill(~m, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        y = y.transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(y), weights
