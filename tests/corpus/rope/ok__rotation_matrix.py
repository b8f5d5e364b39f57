"""Builds each token's d x d rotation matrix (a 2-d rotation in every plane (i, i + d/2)) and applies it with
einsum; positions always widened to (B, T) first."""

import torch


def apply_rope(x, positions, base=10000.0):
    B, H, T, d = x.shape
    h = d // 2
    if positions.dim() == 1:
        positions = positions.expand(B, T)
    i = torch.arange(h, device=x.device, dtype=torch.float64)
    theta = positions.double()[..., None] * base ** (-2.0 * i / d)  # (B, T, h)
    c, s = torch.cos(theta).to(x.dtype), torch.sin(theta).to(x.dtype)
    R = x.new_zeros(B, T, d, d)  # out[e] = sum over f of R[e, f] * x[f]
    idx = torch.arange(h, device=x.device)
    R[..., idx, idx] = c
    R[..., idx + h, idx + h] = c
    R[..., idx, idx + h] = -s
    R[..., idx + h, idx] = s
    return torch.einsum("btef,bhtf->bhte", R, x)
