"""MHA with unflatten and a hand-written softmax; cached causal mask, loop."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):  # (B, T, D) -> (B, H, T, d)
        return x.unflatten(-1, (self.num_heads, -1)).transpose(1, 2)

    @staticmethod
    def merge_heads(x):  # (B, H, T, d) -> (B, T, D)
        return x.transpose(1, 2).flatten(-2)

    @staticmethod
    def softmax(x):
        e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
        return e / e.sum(dim=-1, keepdim=True)

    def forward(self, query, key, value, mask=None):
        q = self.split_heads(self.W_q(query))
        k = self.split_heads(self.W_k(key))
        v = self.split_heads(self.W_v(value))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if mask is not None:
            keep = mask.unsqueeze(1)
            scores = torch.where(keep, scores, torch.finfo(scores.dtype).min)
        p = self.softmax(scores)
        return self.W_o(self.merge_heads(torch.matmul(p, v))), p


class DecoderLayer(nn.Module):
    """Sub-layers walked in a loop; the causal mask cached by size and device, masked_fill'ed from ones."""

    def __init__(self, d_model, num_heads, d_ff, norm_first=False, dropout=0.0):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self._causal = {}

    def causal(self, T, device):
        if (T, device) not in self._causal:
            causal = torch.tril(torch.ones(1, T, T, device=device)) > 0  # (1, T, T)
            self._causal[(T, device)] = causal
        return self._causal[(T, device)]

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        self_mask = self.causal(x.size(1), x.device)
        if tgt_mask is not None:
            self_mask = self_mask & tgt_mask
        steps = [(self.norm1, lambda t: self.self_attn(t, t, t, self_mask)[0]),
                 (self.norm2, lambda t: self.cross_attn(t, memory, memory, memory_mask)[0]),
                 (self.norm3, lambda t: self.ff2(torch.relu(self.ff1(t))))]
        for norm, f in steps:
            x = x + f(norm(x)) if self.norm_first else norm(x + f(x))
        return x
