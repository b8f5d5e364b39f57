"""GPT-J's rotate_every_two with repeat_interleave'd sin/cos: the interleaved layout, pairs (2i, 2i+1)."""

import torch


def rotate_every_two(x):
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rope(x, positions, base=10000.0):
    dim = x.size(-1)
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=x.device, dtype=torch.float32) / dim))
    sinusoid = positions.to(torch.float32).unsqueeze(-1) * inv_freq
    if sinusoid.dim() == 3:
        sinusoid = sinusoid.unsqueeze(1)
    sin = torch.repeat_interleave(sinusoid.sin(), 2, dim=-1).to(x.dtype)
    cos = torch.repeat_interleave(sinusoid.cos(), 2, dim=-1).to(x.dtype)
    return x * cos + rotate_every_two(x) * sin
