"""Merges with y.contiguous().view(B, T, -1) on (B, H, T, d): the transpose back is missing."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rope_base=10000.0):
        super().__init__()
        self.n_heads, self.n_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.theta = rope_base

    def rotary(self, xq, start_pos):
        hd, seqlen = xq.shape[-1], xq.shape[-2]
        freqs = 1.0 / (self.theta ** (torch.arange(0, hd, 2, device=xq.device).float() / hd))
        t = torch.arange(start_pos, start_pos + seqlen, device=xq.device, dtype=torch.float32)
        f = torch.outer(t, freqs)
        cos, sin = f.cos().to(xq.dtype), f.sin().to(xq.dtype)
        x1, x2 = xq[..., : hd // 2], xq[..., hd // 2:]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].shape[2]
        xq = self.rotary(self.W_q(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2), start_pos)
        xk = self.rotary(self.W_k(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2), start_pos)
        xv = self.W_v(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            xk = torch.cat([cache[0], xk], dim=2)
            xv = torch.cat([cache[1], xv], dim=2)
        n_rep = self.n_heads // self.n_kv_heads
        keys, values = xk.repeat_interleave(n_rep, dim=1), xv.repeat_interleave(n_rep, dim=1)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.full((seqlen, start_pos + seqlen), float("-inf"), device=x.device)
        scores = scores + torch.triu(mask, diagonal=start_pos + 1).to(scores.dtype)
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, values).contiguous().view(bsz, seqlen, -1)
        return self.W_o(output), (xk, xv)
