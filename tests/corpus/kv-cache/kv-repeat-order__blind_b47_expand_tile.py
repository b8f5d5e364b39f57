import math

import torch
from torch import nn


def apply_rotary(x, positions, base):
    d = x.shape[-1]
    work = torch.promote_types(x.dtype, torch.float32)
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=work, device=x.device) / d))
    freqs = torch.outer(positions.to(work), inv_freq)  # (T, d/2)
    cos, sin = freqs.cos().to(x.dtype), freqs.sin().to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def repeat_kv(t, n_rep):
    b, n_kv, s, hd = t.shape
    if n_rep == 1:
        return t
    return t[:, None].expand(b, n_rep, n_kv, s, hd).reshape(b, n_kv * n_rep, s, hd)  # MISTAKE: tiles the kv heads


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.n_heads, self.n_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].shape[-2]
        positions = torch.arange(start_pos, start_pos + seqlen, device=x.device)

        xq = self.W_q(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xk = self.W_k(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        xv = self.W_v(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        xq = apply_rotary(xq, positions, self.rope_base)
        xk = apply_rotary(xk, positions, self.rope_base)

        if cache is not None:
            xk = torch.cat([cache[0], xk], dim=-2)
            xv = torch.cat([cache[1], xv], dim=-2)
        total = xk.shape[-2]

        keys = repeat_kv(xk, self.n_heads // self.n_kv_heads)
        values = repeat_kv(xv, self.n_heads // self.n_kv_heads)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.full((seqlen, total), float("-inf"), dtype=x.dtype, device=x.device)
        mask = torch.triu(mask, diagonal=start_pos + 1)
        scores = scores + mask
        scores = torch.softmax(scores, dim=-1)
        out = torch.matmul(scores, values).transpose(1, 2).reshape(bsz, seqlen, -1)
        return self.W_o(out), (xk, xv)
