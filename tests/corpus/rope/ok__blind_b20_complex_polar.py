"""RoPE done with complex numbers in the half-split layout: feature i and feature i + d/2 become the
real and imaginary part of one complex number, which is multiplied by exp(i*theta) from torch.polar;
the real parts go back to the first half and the imaginary parts to the second. Angles are computed
in at least float32. Correct (unusual style: complex multiply instead of cos/sin formulas)."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    half = d // 2
    wd = torch.promote_types(x.dtype, torch.float32)
    freqs = torch.pow(torch.tensor(base, dtype=wd, device=x.device),
                      -torch.arange(half, dtype=wd, device=x.device) * 2.0 / d)
    theta = positions.to(wd).unsqueeze(-1) * freqs
    if positions.dim() == 2:
        theta = theta.unsqueeze(1)
    rot = torch.polar(torch.ones_like(theta), theta)
    z = torch.complex(x[..., :half].to(wd), x[..., half:].to(wd)) * rot
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)
