"""HF style, but the division by sqrt(head_dim) moved after the float32 softmax."""

import math

import torch
import torch.nn.functional as F
from torch import nn


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(h, n_rep):
    b, n_kv, t, hd = h.shape
    if n_rep == 1:
        return h
    return h[:, :, None, :, :].expand(b, n_kv, n_rep, t, hd).reshape(b, n_kv * n_rep, t, hd)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        inv_freq = 1.0 / (rope_base ** (torch.arange(0, self.head_dim, 2, dtype=torch.int64).float() / self.head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.size()
        past_len = cache[0].shape[-2] if cache is not None else 0
        q = self.W_q(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_k(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = self.W_v(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)

        position_ids = torch.arange(past_len, past_len + q_len, device=x.device)
        freqs = position_ids.float()[:, None] * self.inv_freq.float()[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin

        if cache is not None:
            k = torch.cat([cache[0], k], dim=-2)
            v = torch.cat([cache[1], v], dim=-2)
        present = (k, v)
        n_rep = self.num_heads // self.num_key_value_heads
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)

        attn = torch.matmul(q, k.transpose(2, 3))
        kv_len = k.shape[-2]
        causal = torch.full((q_len, kv_len), torch.finfo(attn.dtype).min, device=x.device, dtype=attn.dtype)
        causal = torch.triu(causal, diagonal=past_len + 1)
        attn = attn + causal
        attn = F.softmax(attn, dim=-1, dtype=torch.float32).to(q.dtype) / math.sqrt(self.head_dim)
        out = torch.matmul(attn, v).transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.W_o(out), present
