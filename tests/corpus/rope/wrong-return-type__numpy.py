"""Does the rotation in NumPy and returns the NumPy array."""

import numpy as np


def apply_rope(x, positions, base=10000.0):
    xs = x.detach().cpu().double().numpy()
    pos = positions.detach().cpu().numpy().astype(np.float64)
    d = xs.shape[-1]
    inv_freq = base ** (-np.arange(0, d, 2) / d)
    theta = pos[..., None] * inv_freq
    if theta.ndim == 3:
        theta = theta[:, None]
    x1, x2 = xs[..., : d // 2], xs[..., d // 2:]
    return np.concatenate([x1 * np.cos(theta) - x2 * np.sin(theta), x2 * np.cos(theta) + x1 * np.sin(theta)], -1)
