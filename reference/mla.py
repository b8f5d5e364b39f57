"""DeepSeek-V2/V3 multi-head latent attention (MLA): a model answer, in the naive form.

Keys and values are not projected from x directly: x goes down to a small latent c_kv (kv_rank numbers a
token), and every head's key and value are rebuilt from it by W_kv_b. The cache holds that latent (normalised)
plus one rope key per token shared by every head, not per-head keys and values: that is what MLA saves.
RoPE cannot sit on keys rebuilt from the latent (it would have to be rebuilt per position), so each head's key is
split in two: a "nope" part from the latent, no position, and a "pe" part (d_rope wide) that carries RoPE.

The absorbed form (DeepSeek's inference code) never builds the per-head keys and values: W_kv_b's key block is
folded into the query (q_nope_h W_kb_h: scores against the latent itself) and its value block into the output
(the weights applied to the latent, then W_vb_h). It gives the same numbers, and a file written that way passes.
"""

import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    """x / rms(x) * weight: LayerNorm without the mean subtraction and without the bias."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.to(torch.promote_types(x.dtype, torch.float32))  # a mean of squares in half precision loses digits
        normed = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # eps inside the square root
        return normed.to(x.dtype) * self.weight


def apply_rope(x, positions, base):
    """x (..., T, d); positions (T,): turn each pair (i, i + d/2) by positions * base ** (-2i/d)."""
    d = x.size(-1)
    dtype = torch.promote_types(x.dtype, torch.float32)  # angles in at least float32
    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=dtype) / d)  # (d/2,)
    theta = positions.to(dtype)[:, None] * inv_freq  # (T, d/2)
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]  # pair i is (x1[..., i], x2[..., i])
    rotated = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)  # each pair turned by +theta
    return rotated


class MultiHeadLatentAttention(nn.Module):
    """DeepSeek-V2/V3 multi-head latent attention: keys and values are rebuilt from a small cached latent."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads, self.kv_rank = num_heads, kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)  # head h: [q_nope | q_pe]
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)  # [c_kv | k_pe]: down to the latent
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)  # head h: [k_nope | v]
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.size()
        H, r, dn, dr, dv = self.num_heads, self.kv_rank, self.d_nope, self.d_rope, self.d_v
        past = 0 if cache is None else cache[0].size(1)
        positions = torch.arange(past, past + T, device=x.device)  # the new tokens come after the cached ones

        q = self.W_q(x).view(B, T, H, dn + dr).transpose(1, 2)  # (B, H, T, dn + dr)
        q_nope, q_pe = q.split([dn, dr], dim=-1)  # (B, H, T, dn), (B, H, T, dr)
        q_pe = apply_rope(q_pe, positions, self.rope_base)

        c_kv, k_pe = self.W_kv_a(x).split([r, dr], dim=-1)  # (B, T, r), (B, T, dr)
        c_kv = self.kv_norm(c_kv)  # the cache holds the latent after the norm
        k_pe = apply_rope(k_pe, positions, self.rope_base)  # one rope key a token, no head axis
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)  # (B, Tk, r), Tk = past + T
            k_pe = torch.cat([cache[1], k_pe], dim=1)  # (B, Tk, dr)
        Tk = c_kv.size(1)

        # rebuild every head's key and value from the latent (the naive form)
        kv = self.W_kv_b(c_kv).view(B, Tk, H, dn + dv).transpose(1, 2)  # (B, H, Tk, dn + dv)
        k_nope, v = kv.split([dn, dv], dim=-1)  # (B, H, Tk, dn), (B, H, Tk, dv)

        # the nope parts per head, plus the rope part against the one rope key every head shares
        scores = q_nope @ k_nope.transpose(-2, -1) + q_pe @ k_pe[:, None].transpose(-2, -1)  # (B, H, T, Tk)
        scores = scores / math.sqrt(dn + dr)  # a query head is dn + dr wide
        # causal, bottom-right: new token i sits at past + i and sees keys j <= past + i
        visible = torch.ones(T, Tk, dtype=torch.bool, device=x.device).tril(diagonal=past)  # (T, Tk)
        scores = scores.masked_fill(~visible, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, H, T, Tk)
        y = (weights @ v).transpose(1, 2).reshape(B, T, H * dv)  # (B, T, H, dv) -> (B, T, H * dv)
        return self.W_o(y), (c_kv, k_pe)
