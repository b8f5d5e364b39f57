"""The layer is right; its MultiHeadAttention (from the mha corpus): Calls scores.masked_fill(...) (not masked_fill_) and drops the returned tensor."""

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
