"""The layer is right; its MultiHeadAttention (from the mha corpus): A split_heads helper that does x.reshape(B, H, -1, d): heads cut from the flat (T, D) buffer."""

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
