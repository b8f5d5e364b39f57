"""RoPE in the Hugging Face style, out = x * cos + rotate_half(x) * sin with cos/sin duplicated over
both halves. Mistake: rotate_half returns cat(x2, -x1) instead of cat(-x2, x1), which turns every pair
by -theta (out[i] = x_i cos + x_{i+d/2} sin)."""

import torch


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((x2, -x1), dim=-1)  # MISTAKE


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device).float() / d))
    freqs = positions[..., None].float() * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    if emb.dim() == 3:
        emb = emb.unsqueeze(1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    return x * cos + rotate_half(x) * sin
