"""Unflattens the last axis to (2, d/2) to get the halves, angles in float64, stacks the halves back."""

import math

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    log_freq = -math.log(base) * torch.arange(0, d, 2, device=x.device, dtype=torch.float64) / d
    angles = positions.unsqueeze(-1).double() * torch.exp(log_freq)
    if angles.ndim == 3:
        angles = angles[:, None]
    cos, sin = angles.cos().type_as(x), angles.sin().type_as(x)
    first, second = x.unflatten(-1, (2, d // 2)).unbind(dim=-2)
    return torch.stack((first * cos - second * sin, second * cos + first * sin), dim=-2).flatten(-2)
