"""p_i = 1 / sum_j exp(x_j - x_i): stable for large entries, but -inf - -inf is NaN where two entries are -inf."""

import torch


def softmax(x, dim=-1):
    xd = x.movedim(dim, -1)
    diffs = xd.unsqueeze(-2) - xd.unsqueeze(-1)  # [..., i, j] = x_j - x_i
    p = 1.0 / torch.exp(diffs).sum(-1)
    return p.movedim(-1, dim)
