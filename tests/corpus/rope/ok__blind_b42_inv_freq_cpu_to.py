"""RoPE whose inverse frequencies are computed on the CPU in float32 and moved to the positions' device before the angles are formed; cos/sin then follow x via .to(x)."""
import torch


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    d = x.shape[-1]
    half = d // 2
    inv_freq = 1.0 / (base ** (torch.arange(0, half, dtype=torch.float32) * 2.0 / d))
    inv_freq = inv_freq.to(positions.device)
    theta = positions.to(torch.float32).unsqueeze(-1) * inv_freq  # (T, half) or (B, T, half)
    if theta.dim() == 3:
        theta = theta.unsqueeze(1)  # (B, 1, T, half)
    cos = theta.cos().to(x)
    sin = theta.sin().to(x)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
