"""Meta LLaMA style: view_as_complex on (..., d/2, 2), rotating adjacent pairs (2i, 2i+1)."""
import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    freqs = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device)[: d // 2].float() / d))
    angles = torch.outer(positions.flatten().float(), freqs).view(*positions.shape, d // 2)
    freqs_cis = torch.polar(torch.ones_like(angles), angles)
    if positions.dim() == 2:
        freqs_cis = freqs_cis[:, None]
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    out = torch.view_as_real(xc * freqs_cis).flatten(-2)
    return out.type_as(x)
