"""Exercise rope: rotary position embedding via complex numbers (half-split pairs)."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    half = d // 2
    wide = torch.float64 if x.dtype == torch.float64 else torch.float32
    i = torch.arange(half, device=x.device, dtype=wide)
    freqs = torch.pow(torch.tensor(base, dtype=wide, device=x.device), -2.0 * i / d)  # (d/2,)
    ang = positions.to(wide).unsqueeze(-1) * freqs  # (T, d/2) or (B, T, d/2)
    if ang.dim() == 3:
        ang = ang.unsqueeze(1)  # (B, 1, T, d/2)
    rot = torch.polar(torch.ones_like(ang), ang)  # e^{i theta}
    # pair i is the complex number x[i] + j * x[i + d/2]; multiplying by e^{i theta} turns it by +theta
    z = torch.complex(x[..., :half].to(wide), x[..., half:].to(wide)) * rot
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)
