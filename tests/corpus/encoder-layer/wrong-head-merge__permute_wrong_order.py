"""The layer is right; its MultiHeadAttention (from the mha corpus): Merges with permute(0, 2, 3, 1) -> (B, Tq, d, H) before flattening, interleaving the heads' features."""

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        b, tq, dm = query.shape
        tk = key.shape[1]
        hd = dm // self.h
        q = self.W_q(query).reshape(b, tq, self.h, hd).permute(0, 2, 1, 3)
        k = self.W_k(key).reshape(b, tk, self.h, hd).permute(0, 2, 1, 3)
        v = self.W_v(value).reshape(b, tk, self.h, hd).permute(0, 2, 1, 3)
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) * hd**-0.5
        if mask is not None:
            s = s.masked_fill(~mask[:, None], torch.finfo(s.dtype).min)
        p = F.softmax(s, dim=-1)
        o = torch.einsum("bhqk,bhkd->bhqd", p, v)
        o = o.permute(0, 2, 3, 1).reshape(b, tq, dm)
        return self.W_o(o), p


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
