"""Frequency exponent i/d instead of 2i/d (arange(d/2) divided by d, not by d/2)."""
import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    half = d // 2
    i = torch.arange(half, device=x.device, dtype=torch.float32)
    theta = positions.unsqueeze(-1).float() * base ** (-i / d)
    if theta.ndim == 3:
        theta = theta[:, None, :, :]
    c, s = torch.cos(theta), torch.sin(theta)
    a, b = x[..., :half].float(), x[..., half:].float()
    return torch.cat([a * c - b * s, b * c + a * s], dim=-1).to(x.dtype)
