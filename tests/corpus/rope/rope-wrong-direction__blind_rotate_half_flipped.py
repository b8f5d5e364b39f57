"""rotate_half returns cat(x2, -x1) instead of cat(-x2, x1), which turns every pair by -theta."""
import torch


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([x[..., h:], -x[..., :h]], dim=-1)


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv = 1.0 / base ** (torch.arange(0, d, 2, device=x.device).float() / d)
    t = positions.float()[..., None] * inv
    t = torch.cat([t, t], -1)
    if t.dim() == 3:
        t = t.unsqueeze(1)
    return (x * t.cos().to(x.dtype) + rotate_half(x) * t.sin().to(x.dtype))
