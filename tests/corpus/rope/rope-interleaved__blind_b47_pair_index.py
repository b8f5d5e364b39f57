import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    half = d // 2
    i = torch.arange(half, device=x.device)
    first, second = 2 * i, 2 * i + 1  # MISTAKE: adjacent features paired, not i with i + d/2

    ftype = torch.promote_types(x.dtype, torch.float32)
    freq = base ** (-2.0 * i.to(ftype) / d)  # (d/2,)
    angle = positions.to(ftype).unsqueeze(-1) * freq  # (T, d/2) or (B, T, d/2)
    if angle.dim() == 3:
        angle = angle.unsqueeze(1)
    cos = angle.cos().to(x.dtype)
    sin = angle.sin().to(x.dtype)

    a = x[..., first]
    b = x[..., second]
    out = torch.empty_like(x)
    out[..., first] = a * cos - b * sin
    out[..., second] = b * cos + a * sin
    return out
