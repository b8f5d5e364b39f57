"""Split/merge helpers; forward returns self._merge(ctx) and never calls self.W_o."""

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.n_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _split(self, x):
        return x.unflatten(-1, (self.n_heads, -1)).permute(0, 2, 1, 3)

    def _merge(self, x):
        return x.permute(0, 2, 1, 3).flatten(2)

    def forward(self, query, key, value, mask=None):
        q, k, v = self._split(self.W_q(query)), self._split(self.W_k(key)), self._split(self.W_v(value))
        logits = torch.einsum("bhqd,bhkd->bhqk", q, k) / q.shape[-1] ** 0.5
        if mask is not None:
            logits = torch.where(mask.unsqueeze(1), logits, torch.finfo(logits.dtype).min)
        attn = F.softmax(logits, dim=-1)
        ctx = torch.einsum("bhqk,bhkd->bhqd", attn, v)
        return self._merge(ctx), attn
