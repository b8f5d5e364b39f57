"""Scores are not divided by sqrt(d), and RoPE positions restart at 0 on every call instead of continuing from the cache length."""

import torch
from torch import nn


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_cos_sin(positions, dim, base, device, dtype):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=device, dtype=torch.float32) / dim))
    freqs = positions.float()[:, None] * inv_freq[None, :]  # (T, d/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (T, d)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class CachedSelfAttention(nn.Module):
    """Causal self-attention with grouped kv heads, RoPE and a KV cache (LLaMA-style)."""

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv = num_kv_heads
        self.head_dim = d_model // num_heads
        self.base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, dm = x.shape
        hd = self.head_dim
        xq = self.W_q(x).view(bsz, seqlen, self.n_heads, hd).transpose(1, 2)
        xk = self.W_k(x).view(bsz, seqlen, self.n_kv, hd).transpose(1, 2)
        xv = self.W_v(x).view(bsz, seqlen, self.n_kv, hd).transpose(1, 2)

        pos = torch.arange(seqlen, device=x.device)
        cos, sin = rope_cos_sin(pos, hd, self.base, x.device, torch.promote_types(x.dtype, torch.float32))
        xq = (xq * cos + rotate_half(xq) * sin).to(x.dtype)
        xk = (xk * cos + rotate_half(xk) * sin).to(x.dtype)

        if cache is not None:
            past_k, past_v = cache
            xk = torch.cat([past_k, xk], dim=2)
            xv = torch.cat([past_v, xv], dim=2)
        new_cache = (xk, xv)
        total = xk.shape[2]
        past = total - seqlen

        n_rep = self.n_heads // self.n_kv
        keys = xk[:, :, None].expand(bsz, self.n_kv, n_rep, total, hd).reshape(bsz, self.n_heads, total, hd)
        vals = xv[:, :, None].expand(bsz, self.n_kv, n_rep, total, hd).reshape(bsz, self.n_heads, total, hd)

        scores = torch.matmul(xq, keys.transpose(2, 3))
        mask = torch.full((seqlen, total), float("-inf"), device=x.device, dtype=scores.dtype)
        mask = torch.triu(mask, diagonal=past + 1)
        scores = scores + mask
        probs = torch.softmax(scores, dim=-1)
        out = torch.matmul(probs, vals)
        out = out.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.W_o(out), new_cache
