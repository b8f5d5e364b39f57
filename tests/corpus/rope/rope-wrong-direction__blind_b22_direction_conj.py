"""rope: half-split halves as a complex number, turned by a unit phasor."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    ct = torch.float64 if x.dtype == torch.float64 else torch.float32
    inv_freq = torch.pow(base, -torch.arange(0, d, 2, device=x.device, dtype=ct) / d)
    theta = positions.to(ct)[..., None] * inv_freq
    if theta.ndim == 3:
        theta = theta.unsqueeze(1)
    x1, x2 = x.to(ct).chunk(2, dim=-1)
    z = torch.complex(x1, x2) * torch.polar(torch.ones_like(theta), theta).conj()  # MISTAKE
    return torch.cat((z.real, z.imag), dim=-1).to(x.dtype)
