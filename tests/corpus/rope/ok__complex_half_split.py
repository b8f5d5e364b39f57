"""Complex numbers on the half-split layout: z = x1 + i x2, multiplied by e^(i theta)."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    work = torch.promote_types(x.dtype, torch.float32)
    inv_freq = torch.pow(base, -torch.arange(0, d, 2, device=x.device, dtype=work) / d)
    theta = torch.einsum("...t,f->...tf", positions.to(work), inv_freq)
    if positions.dim() == 2:
        theta = theta.unsqueeze(1)
    x1, x2 = x.to(work).chunk(2, dim=-1)
    z = torch.complex(x1, x2) * torch.polar(torch.ones_like(theta), theta)
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)
