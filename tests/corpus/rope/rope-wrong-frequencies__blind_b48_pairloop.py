import torch


def apply_rope(x, positions, base=10000.0):
    # go pair by pair: feature i turns together with feature i + d/2
    d = x.shape[-1]
    half = d // 2
    pos = positions.to(torch.promote_types(x.dtype, torch.float32))
    if pos.dim() == 1:
        pos = pos.view(1, 1, -1)  # (1, 1, T): the same for every sequence and head
    else:
        pos = pos.unsqueeze(1)  # (B, 1, T)
    out = torch.empty_like(x)
    for i in range(half):
        freq = base ** (-i / d)  # MISTAKE: the exponent is -2i/d, not -i/d
        theta = pos * freq
        c = torch.cos(theta).to(x.dtype)
        s = torch.sin(theta).to(x.dtype)
        a = x[..., i]
        b = x[..., i + half]
        out[..., i] = a * c - b * s
        out[..., i + half] = b * c + a * s
    return out
