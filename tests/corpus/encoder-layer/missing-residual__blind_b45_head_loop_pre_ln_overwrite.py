"""Encoder layer (per-head loop attention) whose pre-LN attention output overwrites x instead of being added to it: missing-residual."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        D = query.size(-1)
        d = D // self.num_heads
        Q, K, V = self.W_q(query), self.W_k(key), self.W_v(value)
        outs, probs = [], []
        for i in range(self.num_heads):
            cols = slice(i * d, (i + 1) * d)
            s = Q[..., cols] @ K[..., cols].transpose(1, 2) / math.sqrt(d)  # (B, Tq, Tk)
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            p = torch.softmax(s, dim=-1)
            outs.append(p @ V[..., cols])
            probs.append(p)
        out = self.W_o(torch.cat(outs, dim=-1))
        return out, torch.stack(probs, dim=1)


class EncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
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
            x = self.self_attn(h, h, h, mask)[0]  # MISTAKE
            h = self.norm2(x)
            x = x + self.ff2(torch.relu(self.ff1(h)))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, mask)[0])
            x = self.norm2(x + self.ff2(torch.relu(self.ff1(x))))
        return x
