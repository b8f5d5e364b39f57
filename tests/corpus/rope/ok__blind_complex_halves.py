"""Correct: the two halves form a complex number x[:d/2] + i x[d/2:], multiplied by e^{i theta} from torch.polar."""
import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    half = d // 2
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
    ang = positions.to(torch.float32).unsqueeze(-1) * inv_freq          # (T, half) or (B, T, half)
    if ang.dim() == 3:
        ang = ang.unsqueeze(1)                                          # (B, 1, T, half)
    work = torch.promote_types(x.dtype, torch.float32)               # float64 stays float64
    ang = ang.to(work)
    rot = torch.polar(torch.ones_like(ang), ang)
    z = torch.complex(x[..., :half].to(work), x[..., half:].to(work)) * rot
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)
