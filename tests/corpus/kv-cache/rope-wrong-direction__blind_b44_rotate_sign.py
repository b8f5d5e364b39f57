import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x2, -x1), dim=-1)  # MISTAKE


def rope_cache(positions, dim, base, dtype):
    work = torch.float64 if dtype == torch.float64 else torch.float32
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=positions.device, dtype=work) / dim))
    freqs = positions.to(work)[:, None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, dim = x.shape
        start_pos = 0 if cache is None else cache[0].size(2)

        xq = self.W_q(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xk = self.W_k(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        xv = self.W_v(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)

        cos, sin = rope_cache(torch.arange(start_pos, start_pos + seqlen, device=x.device),
                              self.head_dim, self.rope_base, x.dtype)
        xq = xq * cos + rotate_half(xq) * sin
        xk = xk * cos + rotate_half(xk) * sin

        if cache is None:
            keys, values = xk, xv
        else:
            keys = torch.cat([cache[0], xk], dim=2)
            values = torch.cat([cache[1], xv], dim=2)

        n_rep = self.n_heads // self.n_kv_heads
        k = keys.repeat_interleave(n_rep, dim=1)
        v = values.repeat_interleave(n_rep, dim=1)

        scores = torch.matmul(xq, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        total = keys.size(2)
        allowed = torch.ones(seqlen, total, dtype=torch.bool, device=x.device).tril(diagonal=start_pos)
        scores = scores.masked_fill(~allowed, float("-inf"))
        probs = F.softmax(scores.float() if scores.dtype in (torch.float16, torch.bfloat16) else scores, dim=-1)
        output = torch.matmul(probs.type_as(xq), v)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, dim)
        return self.W_o(output), (keys, values)
