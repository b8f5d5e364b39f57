"""Polar form: the angle of each pair from atan(x2 / x1) (quadrant fixed by hand), plus theta. At a zero
vector x2 / x1 is 0 / 0 = NaN."""

import math

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    h = d // 2
    theta = positions.double()[..., None] * base ** (-torch.arange(h, device=x.device).double() * 2 / d)
    if theta.dim() == 3:
        theta = theta[:, None]
    a, b = x[..., :h].double(), x[..., h:].double()
    phi = torch.atan(b / a) + math.pi * (a < 0)
    r = torch.hypot(a, b)
    return torch.cat([r * torch.cos(phi + theta), r * torch.sin(phi + theta)], dim=-1).to(x.dtype)
