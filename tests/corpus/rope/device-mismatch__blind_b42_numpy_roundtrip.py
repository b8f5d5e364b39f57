"""RoPE that computes cos/sin in NumPy from positions.cpu().numpy() and brings them back with torch.from_numpy, leaving them on the CPU."""
import numpy as np
import torch


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    d = x.shape[-1]
    half = d // 2
    pos = positions.detach().cpu().numpy().astype(np.float64)
    inv_freq = base ** (-2.0 * np.arange(half, dtype=np.float64) / d)
    theta = pos[..., None] * inv_freq
    cos = torch.from_numpy(np.cos(theta)).to(x.dtype)
    sin = torch.from_numpy(np.sin(theta)).to(x.dtype)
    if cos.dim() == 3:
        cos, sin = cos[:, None], sin[:, None]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
