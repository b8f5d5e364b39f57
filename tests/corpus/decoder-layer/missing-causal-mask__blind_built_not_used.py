"""Mistake: the look-ahead mask is built but self-attention is handed tgt_mask instead."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.n_heads = num_heads
        self.hd = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        Q = self.W_q(query).split(self.hd, dim=-1)
        K = self.W_k(key).split(self.hd, dim=-1)
        V = self.W_v(value).split(self.hd, dim=-1)
        heads, weights = [], []
        for qh, kh, vh in zip(Q, K, V):
            s = qh @ kh.transpose(-2, -1) / math.sqrt(self.hd)
            if mask is not None:
                s = s.masked_fill(mask.logical_not(), float("-inf"))
            p = F.softmax(s, dim=-1)
            heads.append(p @ vh)
            weights.append(p)
        return self.W_o(torch.cat(heads, dim=-1)), torch.stack(weights, dim=1)


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
        sa = lambda t: self.self_attn(t, t, t, tgt_mask)[0]
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
