import torch


def rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x2, -x1), dim=-1)  # MISTAKE: signs on the wrong half, this turns by -theta


def apply_rope(x, positions, base=10000.0):
    dim = x.shape[-1]
    work = torch.promote_types(x.dtype, torch.float32)
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=work, device=x.device) / dim))
    freqs = positions.to(work).unsqueeze(-1) * inv_freq  # (..., T, dim/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (..., T, dim)
    cos = emb.cos().unsqueeze(-3).to(x.dtype)  # (1, T, dim) or (B, 1, T, dim)
    sin = emb.sin().unsqueeze(-3).to(x.dtype)
    return x * cos + rotate_half(x) * sin
