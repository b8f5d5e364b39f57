"""rope: Meta-style freqs_cis and complex multiplication."""

import torch


def precompute_freqs_cis(positions, dim, theta, real_dtype):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, device=positions.device)[: dim // 2].to(real_dtype) / dim))
    angles = positions.to(real_dtype)[..., None] * freqs
    return torch.polar(torch.ones_like(angles), angles)  # e^{i * angle}


def apply_rope(x, positions, base=10000.0):
    B, H, T, d = x.shape
    rt = torch.float64 if x.dtype == torch.float64 else torch.float32
    freqs_cis = precompute_freqs_cis(positions, d, base, rt)
    if freqs_cis.dim() == 3:  # (B, T, d/2) -> (B, 1, T, d/2)
        freqs_cis = freqs_cis[:, None]
    xc = torch.view_as_complex(x.to(rt).reshape(B, H, T, d // 2, 2).contiguous())  # MISTAKE
    out = torch.view_as_real(xc * freqs_cis).flatten(3)
    return out.type_as(x)
