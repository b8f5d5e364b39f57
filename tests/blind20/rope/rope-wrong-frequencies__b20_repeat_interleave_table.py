"""RoPE with the Hugging Face rotate_half (half-split pairs), but the per-feature angle table is
widened from d/2 to d with repeat_interleave(2). Mistake: the half-split layout needs the table
repeated as [f0..f_{d/2-1}, f0..f_{d/2-1}] (cat); repeat_interleave gives [f0, f0, f1, f1, ...], so
feature i and its partner i + d/2 use different angles and most pairs turn by the wrong frequency."""

import torch


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = base ** (-(torch.arange(d // 2, device=x.device, dtype=torch.float32) * 2) / d)
    freqs = positions.to(torch.float32).unsqueeze(-1) * inv_freq
    emb = freqs.repeat_interleave(2, dim=-1)  # MISTAKE
    if positions.dim() == 2:
        emb = emb[:, None]
    return x * emb.cos().to(x.dtype) + rotate_half(x) * emb.sin().to(x.dtype)
