"""Mistake: in the pre-LN branch norm2 is applied to memory as well as to x before cross-attention."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        assert d_model % num_heads == 0
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).view(B, Tq, self.num_heads, self.d_k).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, self.num_heads, self.d_k).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, self.num_heads, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        out = (attn @ v).transpose(1, 2).contiguous().view(B, Tq, D)
        return self.W_o(out), attn


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
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
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device)).unsqueeze(0)
        self_mask = causal if tgt_mask is None else causal & tgt_mask
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, self_mask)[0]
            h, m = self.norm2(x), self.norm2(memory)
            x = x + self.cross_attn(h, m, m, memory_mask)[0]
            x = x + self.ff2(F.relu(self.ff1(self.norm3(x))))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, self_mask)[0])
            x = self.norm2(x + self.cross_attn(x, memory, memory, memory_mask)[0])
            x = self.norm3(x + self.ff2(F.relu(self.ff1(x))))
        return x
