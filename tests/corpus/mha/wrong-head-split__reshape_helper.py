"""A split_heads helper that does x.reshape(B, H, -1, d): heads cut from the flat (T, D) buffer."""

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

    def split_heads(self, x):
        B, T, D = x.shape
        return x.reshape(B, self.num_heads, -1, D // self.num_heads)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        q = self.split_heads(self.W_q(query))
        k = self.split_heads(self.W_k(key))
        v = self.split_heads(self.W_v(value))
        att = torch.einsum("bhid,bhjd->bhij", q, k) * (q.size(-1) ** -0.5)
        if mask is not None:
            att = torch.where(mask[:, None], att, torch.finfo(att.dtype).min)
        att = F.softmax(att, dim=-1)
        y = torch.einsum("bhij,bhjd->bhid", att, v)
        y = y.permute(0, 2, 1, 3).reshape(B, Tq, D)
        return self.W_o(y), att
