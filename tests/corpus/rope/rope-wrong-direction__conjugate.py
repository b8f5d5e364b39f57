"""Complex form on the half split, but multiplies by the conjugate e^(-i theta)."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    freqs = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    theta = torch.einsum("...t,f->...tf", positions.float(), freqs)
    if theta.dim() == 3:
        theta = theta.unsqueeze(1)
    rot = torch.polar(torch.ones_like(theta), theta).conj()
    x1, x2 = x.float().chunk(2, -1)
    z = torch.complex(x1, x2) * rot
    return torch.cat([z.real, z.imag], -1).to(x.dtype)
