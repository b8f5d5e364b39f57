"""The layer is right; its MultiHeadAttention (from the mha corpus): Replaces torch.nn.functional.linear at import with its own version."""

import math

import torch
import torch.nn.functional as F
from torch import nn

_linear = F.linear
F.linear = lambda x, w, b=None: _linear(x, w, b)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model, bias=bias) for _ in range(4))

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        split = lambda x: x.view(B, -1, self.h, self.d).transpose(1, 2)
        q, k, v = split(self.W_q(query)), split(self.W_k(key)), split(self.W_v(value))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        if mask is not None:
            s = s.masked_fill(~mask[:, None], float("-inf"))
        w = s.softmax(-1)
        return self.W_o((w @ v).transpose(1, 2).reshape(B, Tq, D)), w


import torch  # noqa: E402 (the layer's)
from torch import nn  # noqa: E402


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        T = x.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril().unsqueeze(0)  # (1, T, T)
        self_mask = causal if tgt_mask is None else causal & tgt_mask
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, self_mask)[0]
            h = self.norm2(x)
            x = x + self.cross_attn(h, memory, memory, memory_mask)[0]
            x = x + self.ff2(torch.relu(self.ff1(self.norm3(x))))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, self_mask)[0])
            x = self.norm2(x + self.cross_attn(x, memory, memory, memory_mask)[0])
            x = self.norm3(x + self.ff2(torch.relu(self.ff1(x))))
        return x
