"""The layer is right; its MultiHeadAttention (from the mha corpus): Split/merge helpers; forward returns self._merge(ctx) and never calls self.W_o."""

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


import torch  # noqa: E402 (the layer's)
from torch import nn  # noqa: E402


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, mask)[0]
            x = x + self.ff2(torch.relu(self.ff1(self.norm2(x))))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, mask)[0])
            x = self.norm2(x + self.ff2(torch.relu(self.ff1(x))))
        return x
