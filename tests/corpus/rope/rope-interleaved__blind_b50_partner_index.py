import torch


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    lo, hi = torch.arange(d, device=x.device).view(d // 2, 2).T  # MISTAKE: partners (2i, 2i+1); the half-split layout pairs i with i + d/2
    f = torch.promote_types(x.dtype, torch.float32)
    exponent = torch.arange(d // 2, device=x.device, dtype=f) * 2 / d
    theta = positions.to(f)[..., None] / base ** exponent  # (T, d/2) or (B, T, d/2)
    if positions.dim() == 2:
        theta = theta[:, None, :, :]
    c, s = torch.cos(theta).to(x.dtype), torch.sin(theta).to(x.dtype)
    a, b = x[..., lo], x[..., hi]
    out = torch.empty_like(x)
    out[..., lo] = a * c - b * s
    out[..., hi] = b * c + a * s
    return out
