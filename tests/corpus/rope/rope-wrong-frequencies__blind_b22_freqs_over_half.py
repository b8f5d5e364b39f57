"""rope: torch.outer tables, a loop over the batch for per-sequence positions."""

import torch


def _rotate(x, pos, base):
    # x (H, T, d) or (B, H, T, d) sharing pos (T,)
    d = x.shape[-1]
    ft = torch.promote_types(x.dtype, torch.float32)
    exponent = torch.arange(0, d, 2, device=x.device, dtype=ft) / (d // 2)  # MISTAKE
    freqs = torch.outer(pos.to(ft), 1.0 / base**exponent)  # (T, d/2)
    cos, sin = freqs.cos().to(x.dtype), freqs.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def apply_rope(x, positions, base=10000.0):
    if positions.dim() == 1:
        return _rotate(x, positions, base)
    return torch.stack([_rotate(x[b], positions[b], base) for b in range(x.shape[0])])
