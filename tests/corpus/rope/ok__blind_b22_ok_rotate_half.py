"""rope: Hugging Face's rotate_half with full-width cos/sin, positions always expanded to (B, T)."""

import torch


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, positions, base=10000.0):
    B, H, T, d = x.shape
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64, device=x.device).float() / d))
    pos = positions.expand(B, T).float()  # (B, T)
    freqs = pos[:, :, None] * inv_freq[None, None, :]  # (B, T, d/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (B, T, d)
    cos = emb.cos().to(x.dtype).unsqueeze(1)  # (B, 1, T, d)
    sin = emb.sin().to(x.dtype).unsqueeze(1)
    return x * cos + rotate_half(x) * sin
