"""kv-cache: a per-head loop, Meta-style names (xq, xk, start_pos)."""

import math

import torch
from torch import nn


def rotate(t, pos, base):
    # t (B, h, T, d), pos (T,): pair i is (i, i + d/2)
    half = t.shape[-1] // 2
    wt = torch.promote_types(t.dtype, torch.float32)
    freq = base ** (-torch.arange(half, device=t.device, dtype=wt) * 2 / t.shape[-1])
    ang = pos.to(wt)[:, None] * freq[None, :]
    c, s = ang.cos().to(t.dtype), ang.sin().to(t.dtype)
    a, b = t[..., :half], t[..., half:]
    return torch.cat((a * c - b * s, b * c + a * s), -1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.n_head = num_heads
        self.n_kv = num_kv_heads
        self.hd = d_model // num_heads
        self.base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        hd = self.hd
        group = self.n_head // self.n_kv
        start_pos = 0 if cache is None else cache[0].shape[2]
        pos = torch.arange(start_pos, start_pos + seqlen, device=x.device)

        xq = self.W_q(x).reshape(bsz, seqlen, self.n_head, hd).permute(0, 2, 1, 3)
        xk = self.W_k(x).reshape(bsz, seqlen, self.n_kv, hd).permute(0, 2, 1, 3)
        xv = self.W_v(x).reshape(bsz, seqlen, self.n_kv, hd).permute(0, 2, 1, 3)
        xq = rotate(xq, pos, self.base)
        xk = rotate(xk, pos, self.base)

        if cache is not None:
            past_k, past_v = cache
            keys = torch.cat([past_k, xk], dim=1)  # MISTAKE
            values = torch.cat([past_v, xv], dim=1)
        else:
            keys, values = xk, xv
        total = keys.shape[2]

        allowed = torch.ones(seqlen, total, dtype=torch.bool, device=x.device).tril(total - seqlen)
        heads = []
        for h in range(self.n_head):
            kh = keys[:, h // group]  # (B, Tk, d)
            vh = values[:, h // group]
            att = xq[:, h] @ kh.transpose(1, 2) / math.sqrt(hd)
            att = att.masked_fill(~allowed, float("-inf"))
            att = torch.softmax(att, dim=-1)
            heads.append(att @ vh)
        y = torch.cat(heads, dim=-1)  # (B, T, H*d): head h at [h*d, (h+1)*d)
        return self.W_o(y), (keys, values)
