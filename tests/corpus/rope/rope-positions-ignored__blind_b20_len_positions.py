"""RoPE whose angle table is built with torch.outer over arange(len(positions)) (the candidate treats
positions as "how many tokens"). Mistake: the rotation uses 0..len-1 rather than the given positions:
for (T,) positions every token turns by its index; for (B, T) positions the table has B rows, which
broadcasts wrongly or raises unless B == 1 or B == T. Right only when positions are exactly 0..T-1."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    inv_freq = base ** (-torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)
    t = torch.arange(len(positions), dtype=torch.float32, device=x.device)  # MISTAKE
    freqs = torch.outer(t, inv_freq)
    cos = freqs.cos().to(x.dtype)
    sin = freqs.sin().to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
