"""Two mistakes: GPT-J style adjacent pairs (2i, 2i+1), and the sine's sign flipped (rotation by -theta)."""
import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d))
    sinusoid = positions.float()[..., None] * inv_freq                    # (..., T, d/2)
    if sinusoid.dim() == 3:
        sinusoid = sinusoid[:, None]
    sin = torch.repeat_interleave(sinusoid.sin(), 2, dim=-1)
    cos = torch.repeat_interleave(sinusoid.cos(), 2, dim=-1)
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    rotated = torch.stack((x2, -x1), dim=-1).flatten(-2)
    return (x.float() * cos + rotated.float() * sin).to(x.dtype)
