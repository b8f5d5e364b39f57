import torch


def apply_rope(x, positions, base=10000.0):
    *_, T, d = x.shape
    fdt = torch.promote_types(x.dtype, torch.float32)
    freqs = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device, dtype=fdt)[: d // 2] / d))
    angles = positions.to(fdt).unsqueeze(-1) * freqs  # (T, d/2) or (B, T, d/2)
    freqs_cis = torch.polar(torch.ones_like(angles), angles)
    if freqs_cis.dim() == 3:
        freqs_cis = freqs_cis.unsqueeze(1)  # one row per sequence, shared by its heads
    # half-split: feature i is the real part of pair i, feature i + d/2 its imaginary part
    x_ = torch.complex(x[..., : d // 2].to(fdt), x[..., d // 2:].to(fdt))
    x_out = x_ * freqs_cis
    return torch.cat([x_out.real, x_out.imag], dim=-1).to(x.dtype)
