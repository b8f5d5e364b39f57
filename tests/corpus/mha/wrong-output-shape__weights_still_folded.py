"""Folds heads into the batch for bmm and returns the weights still folded, (B*H, Tq, Tk)."""

import torch
from torch import nn


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
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H, d = self.num_heads, self.head_dim
        q = self.W_q(query).view(B, Tq, H, d).transpose(1, 2).reshape(B * H, Tq, d)
        k = self.W_k(key).view(B, Tk, H, d).transpose(1, 2).reshape(B * H, Tk, d)
        v = self.W_v(value).view(B, Tk, H, d).transpose(1, 2).reshape(B * H, Tk, d)
        attn = torch.bmm(q, k.transpose(1, 2)) * d**-0.5
        if mask is not None:
            attn = attn.masked_fill(~mask.repeat_interleave(H, dim=0), torch.finfo(attn.dtype).min)
        attn = attn.softmax(dim=-1)
        out = torch.bmm(attn, v).view(B, H, Tq, d).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(out), attn
