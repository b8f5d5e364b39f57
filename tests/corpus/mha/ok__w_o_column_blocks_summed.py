"""Correct: W_o applied per head, each head through its column block of W_o, summed, the bias added once
(the same computation as W_o on the merged heads)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        b, tq, dm = query.shape
        tk = key.shape[1]
        nh, hd = self.num_heads, self.head_dim
        q = self.W_q(query).reshape(b, tq, nh, hd).permute(0, 2, 1, 3)
        k = self.W_k(key).reshape(b, tk, nh, hd).permute(0, 2, 1, 3)
        v = self.W_v(value).reshape(b, tk, nh, hd).permute(0, 2, 1, 3)

        logits = torch.einsum("bhqd,bhkd->bhqk", q, k) * hd**-0.5
        if mask is not None:
            m = mask[:, None]
            logits = torch.where(m, logits, float("-inf"))
        probs = F.softmax(logits, dim=-1)
        if mask is not None:
            probs = torch.where(m.any(dim=-1, keepdim=True), probs, 0.0)

        ctx = torch.einsum("bhqk,bhkd->bhqd", probs, v)  # (b, nh, tq, hd)
        blocks = self.W_o.weight.view(dm, nh, hd)  # column block h: W_o.weight[:, h*hd:(h+1)*hd]
        out = torch.einsum("bhqd,ohd->bqo", ctx, blocks)
        if self.W_o.bias is not None:
            out = out + self.W_o.bias
        return out, probs
