import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.h = num_heads
        self.d_k = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        nbatches = query.size(0)
        if mask is not None:
            mask = mask.unsqueeze(1)  # same mask for every head
        q, k, v = [
            lin(t).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, t in zip((self.W_q, self.W_k, self.W_v), (query, key, value))
        ]
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        p_attn = scores.softmax(dim=-1)
        if mask is not None:
            p_attn = p_attn.masked_fill(~mask.any(-1, keepdim=True), 0.0)
        x = torch.matmul(p_attn, v)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.W_o(x), p_attn


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def sublayer(self, x, norm, fn):
        """Residual connection around fn, with the layer norm where norm_first says."""
        if self.norm_first:
            return x + fn(norm(x))
        return x + norm(fn(x))  # MISTAKE: post-LN normalises the sub-layer's output, not the residual sum

    def forward(self, x, mask=None):
        x = self.sublayer(x, self.norm1, lambda y: self.self_attn(y, y, y, mask)[0])
        x = self.sublayer(x, self.norm2, lambda y: self.ff2(F.relu(self.ff1(y))))
        return x
