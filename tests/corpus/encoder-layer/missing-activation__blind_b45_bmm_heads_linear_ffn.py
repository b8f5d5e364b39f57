"""Encoder layer (bmm attention with heads folded into the batch) whose feed-forward has no ReLU between ff1 and ff2: missing-activation."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.h = num_heads
        self.dh = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def heads(self, t):
        B, T, _ = t.shape
        return t.view(B, T, self.h, self.dh).transpose(1, 2).reshape(B * self.h, T, self.dh)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        q, k, v = self.heads(self.W_q(query)), self.heads(self.W_k(key)), self.heads(self.W_v(value))
        s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.dh)  # (B*H, Tq, Tk)
        if mask is not None:
            m = mask.expand(B, Tq, Tk).repeat_interleave(self.h, dim=0)
            s = s.masked_fill(~m, float("-inf"))
        w = torch.softmax(s, dim=-1)
        o = torch.bmm(w, v).view(B, self.h, Tq, self.dh).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(o), w.view(B, self.h, Tq, Tk)


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def ffn(self, x):
        return self.ff2(self.ff1(x))  # MISTAKE

    def forward(self, x, mask=None):
        if self.norm_first:
            n = self.norm1(x)
            x = x + self.self_attn(n, n, n, mask=mask)[0]
            return x + self.ffn(self.norm2(x))
        x = self.norm1(x + self.self_attn(x, x, x, mask=mask)[0])
        return self.norm2(x + self.ffn(x))
