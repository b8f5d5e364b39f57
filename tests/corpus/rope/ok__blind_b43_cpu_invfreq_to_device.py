"""RoPE whose inverse frequencies are made on the CPU without device= and then moved with .to(x.device); cos and sin are cast back with .type_as(x)."""
import torch


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    d = x.shape[-1]
    half = d // 2
    angle_dtype = torch.promote_types(x.dtype, torch.float32)
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=angle_dtype) / d))  # CPU
    inv_freq = inv_freq.to(x.device)
    theta = positions.to(angle_dtype)[..., None] * inv_freq  # (T, half) or (B, T, half)
    if theta.dim() == 2:
        theta = theta[None, None]  # (1, 1, T, half)
    else:
        theta = theta[:, None]  # (B, 1, T, half)
    cos = theta.cos().type_as(x)
    sin = theta.sin().type_as(x)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
