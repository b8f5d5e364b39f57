"""Mistake (shows in cross_attn): keys are projected from the query input instead of the key input."""
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
        k = self.W_k(query).view(B, Tk, self.num_heads, self.d_k).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, self.num_heads, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        out = (attn @ v).transpose(1, 2).contiguous().view(B, Tq, D)
        return self.W_o(out), attn


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.pre_norm = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.mlp = nn.Sequential(self.ff1, nn.ReLU(), self.ff2)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        Tq = x.shape[1]
        look_ahead = torch.ones(Tq, Tq, device=x.device).tril().bool()
        if tgt_mask is not None:
            look_ahead = look_ahead & tgt_mask          # (B, Tq, Tq)
        else:
            look_ahead = look_ahead.unsqueeze(0)        # (1, Tq, Tq)
        sa = lambda t: self.self_attn(t, t, t, look_ahead)[0]
        ca = lambda t: self.cross_attn(t, memory, memory, memory_mask)[0]
        if self.pre_norm:
            x = x + sa(self.norm1(x))
            x = x + ca(self.norm2(x))
            x = x + self.mlp(self.norm3(x))
        else:
            x = self.norm1(x + sa(x))
            x = self.norm2(x + ca(x))
            x = self.norm3(x + self.mlp(x))
        return x
