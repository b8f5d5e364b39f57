"""Meta's LLaMA code: view_as_complex on adjacent features, so it rotates pairs (2i, 2i+1) instead of
(i, i + d/2)."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    freqs = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device)[: d // 2].float() / d))
    angles = positions.float()[..., None] * freqs
    if angles.dim() == 3:
        angles = angles[:, None]
    freqs_cis = torch.polar(torch.ones_like(angles), angles)
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    out = torch.view_as_real(xc * freqs_cis).flatten(-2)
    return out.type_as(x)
