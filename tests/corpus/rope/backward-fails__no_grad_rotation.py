"""Does the whole rotation under torch.no_grad() since it has no parameters: the queries and keys it
rotates then get no gradient."""

import torch


def apply_rope(x, positions, base=10000.0):
    with torch.no_grad():
        d = x.size(-1)
        half = d // 2
        inv = base ** (-torch.arange(half, device=x.device, dtype=torch.float64) * 2 / d)
        theta = positions.double()[..., None] * inv
        if theta.dim() == 3:
            theta = theta[:, None]
        c, s = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
        a, b = x[..., :half], x[..., half:]
        return torch.cat([a * c - b * s, b * c + a * s], dim=-1)
