import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.n_head = num_heads
        self.head_dim = d_model // num_heads
        self.scale = 1.0 / math.sqrt(d_model)  # MISTAKE
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, C = query.shape
        Tk = key.shape[1]
        nh, hd = self.n_head, self.head_dim
        q = self.W_q(query).view(B, Tq, nh, hd)
        k = self.W_k(key).view(B, Tk, nh, hd)
        v = self.W_v(value).view(B, Tk, nh, hd)
        att = torch.einsum("bqhd,bkhd->bhqk", q, k) * self.scale
        if mask is not None:
            att = torch.where(mask[:, None], att, torch.full_like(att, float("-inf")))
        att = att.softmax(dim=-1)
        y = torch.einsum("bhqk,bkhd->bqhd", att, v).reshape(B, Tq, C)
        return self.W_o(y), att
