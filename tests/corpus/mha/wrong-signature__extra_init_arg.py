"""__init__ requires an extra positional d_head argument: MultiHeadAttention(d_model, num_heads) raises TypeError."""

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_head, bias=True):
        super().__init__()
        self.h = num_heads
        self.d_head = d_head
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        b, tq, dm = query.shape
        tk = key.shape[1]
        q = self.W_q(query).reshape(b, tq, self.h, self.d_head).permute(0, 2, 1, 3)
        k = self.W_k(key).reshape(b, tk, self.h, self.d_head).permute(0, 2, 1, 3)
        v = self.W_v(value).reshape(b, tk, self.h, self.d_head).permute(0, 2, 1, 3)
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / self.d_head**0.5
        if mask is not None:
            s = torch.where(mask[:, None], s, torch.finfo(s.dtype).min)
        p = F.softmax(s, dim=-1)
        o = torch.einsum("bhqk,bhkd->bhqd", p, v).permute(0, 2, 1, 3).reshape(b, tq, dm)
        return self.W_o(o), p
