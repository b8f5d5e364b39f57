"""Softmax via a 2-D view: moves dim to the end, flattens the rest into rows, shifts each row by its
max and exponentiates. Mistake: the normaliser is summed over axis 0 of the 2-D view (across rows)
instead of axis 1, so each column of the flattened matrix sums to 1 rather than each slice along dim."""

import torch


def softmax(x, dim=-1):
    moved = x.movedim(dim, -1)
    shape = moved.shape
    rows = moved.reshape(-1, shape[-1])          # (N, n)
    shifted = rows - rows.amax(dim=1, keepdim=True)
    e = torch.exp(shifted)
    z = e.sum(dim=0, keepdim=True)  # MISTAKE
    return (e / z).reshape(shape).movedim(-1, dim)
