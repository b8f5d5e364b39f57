import math

import torch
import torch.nn.functional as F
from torch import nn


def precompute_freqs_cis(dim, end, theta, device, dtype):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device, dtype=dtype)[: dim // 2] / dim))
    t = torch.arange(end, device=device, dtype=dtype)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)  # (end, dim/2)


def apply_rotary_emb(x, freqs_cis):
    # x (B, T, H, d): pairs (i, i + d/2) are the real and imaginary parts
    real = freqs_cis.real.dtype
    half = x.shape[-1] // 2
    x_ = torch.complex(x[..., :half].to(real), x[..., half:].to(real))
    x_out = x_ * freqs_cis[None, :, None, :]
    return torch.cat([x_out.real, x_out.imag], dim=-1).type_as(x)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv_heads = num_kv_heads
        self.n_rep = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_theta = rope_base
        self.W_q = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(num_heads * self.head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].shape[2]
        freqs_cis = precompute_freqs_cis(self.head_dim, start_pos + seqlen, self.rope_theta, x.device,
                                         torch.promote_types(x.dtype, torch.float32))
        freqs_cis = freqs_cis[:seqlen]  # MISTAKE: the new tokens sit at start_pos .. start_pos + seqlen - 1, not 0 .. seqlen - 1

        xq = self.W_q(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.W_k(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = self.W_v(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xq = apply_rotary_emb(xq, freqs_cis)
        xk = apply_rotary_emb(xk, freqs_cis)

        xk, xv = xk.transpose(1, 2), xv.transpose(1, 2)  # (B, Hkv, T, d): the layout the cache keeps
        if cache is not None:
            xk = torch.cat((cache[0], xk), dim=2)
            xv = torch.cat((cache[1], xv), dim=2)
        keys = torch.repeat_interleave(xk, self.n_rep, dim=1)
        values = torch.repeat_interleave(xv, self.n_rep, dim=1)

        xq = xq.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.full((seqlen, seqlen), float("-inf"), device=x.device, dtype=scores.dtype)
        mask = torch.triu(mask, diagonal=1)
        mask = torch.hstack([torch.zeros((seqlen, start_pos), device=x.device, dtype=scores.dtype), mask])
        scores = F.softmax(scores + mask, dim=-1)
        output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.W_o(output), (xk, xv)
