"""RoPE rotates adjacent pairs (2i, 2i+1) instead of (i, i + d/2), and scores are divided by d rather than sqrt(d)."""

import torch
from torch import nn


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    work = torch.promote_types(x.dtype, torch.float32)
    inv_freq = 1.0 / base ** (torch.arange(0, d, 2, device=x.device, dtype=work) / d)
    ang = positions.to(work)[:, None] * inv_freq  # (T, d/2)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x_even = x[..., 0::2]
    x_odd = x[..., 1::2]
    r_even = x_even * cos - x_odd * sin
    r_odd = x_odd * cos + x_even * sin
    return torch.stack((r_even, r_odd), dim=-1).flatten(-2)


class CachedSelfAttention(nn.Module):
    """Causal self-attention with grouped kv heads, RoPE and a KV cache."""

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.H = num_heads
        self.Hkv = num_kv_heads
        self.dh = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, self.Hkv * self.dh, bias=False)
        self.W_v = nn.Linear(d_model, self.Hkv * self.dh, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, Hkv, dh = self.H, self.Hkv, self.dh
        t0 = 0
        if cache is not None:
            t0 = cache[0].shape[2]
        positions = torch.arange(t0, t0 + T, device=x.device)

        q = self.W_q(x).view(B, T, H, dh).transpose(1, 2)
        k_new = self.W_k(x).view(B, T, Hkv, dh).transpose(1, 2)
        v_new = self.W_v(x).view(B, T, Hkv, dh).transpose(1, 2)
        q = apply_rope(q, positions, self.rope_base)
        k_new = apply_rope(k_new, positions, self.rope_base)

        if cache is None:
            k_all, v_all = k_new, v_new
        else:
            k_all = torch.cat([cache[0], k_new], dim=2)
            v_all = torch.cat([cache[1], v_new], dim=2)
        Tk = k_all.shape[2]

        rep = H // Hkv
        k_h = torch.repeat_interleave(k_all, rep, dim=1)
        v_h = torch.repeat_interleave(v_all, rep, dim=1)

        scores = torch.matmul(q, k_h.transpose(-1, -2)) / dh
        qi = torch.arange(T, device=x.device).unsqueeze(1) + t0
        kj = torch.arange(Tk, device=x.device).unsqueeze(0)
        scores = scores.masked_fill(kj > qi, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(weights, v_h)
        ctx = ctx.transpose(1, 2).reshape(B, T, D)
        return self.W_o(ctx), (k_all, v_all)
