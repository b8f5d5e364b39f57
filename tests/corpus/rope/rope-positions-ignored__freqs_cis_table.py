"""Meta-style precompute_freqs_cis(dim, end) for end = T, used in order (half-split layout): token t gets
position t, the positions argument is never read."""

import torch


def precompute_freqs_cis(dim, end, theta, device):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device)[: dim // 2].double() / dim))
    t = torch.arange(end, device=device, dtype=torch.float64)
    return torch.polar(torch.ones(end, dim // 2, device=device, dtype=torch.float64), torch.outer(t, freqs))


def apply_rope(x, positions, base=10000.0):
    freqs_cis = precompute_freqs_cis(x.shape[-1], x.shape[-2], base, x.device)
    x1, x2 = x.double().chunk(2, dim=-1)
    z = torch.complex(x1, x2) * freqs_cis
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)
