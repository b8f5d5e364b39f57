"""Calls scores.masked_fill(...) (not masked_fill_) and drops the returned tensor."""

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.dk = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        nb = query.size(0)
        q = self.W_q(query).view(nb, -1, self.h, self.dk).transpose(1, 2)
        k = self.W_k(key).view(nb, -1, self.h, self.dk).transpose(1, 2)
        v = self.W_v(value).view(nb, -1, self.h, self.dk).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.dk**-0.5
        if mask is not None:
            mask = mask.unsqueeze(1)
            scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
        p_attn = F.softmax(scores, dim=-1)
        x = torch.matmul(p_attn, v)
        x = x.transpose(1, 2).contiguous().view(nb, -1, self.h * self.dk)
        return self.W_o(x), p_attn
