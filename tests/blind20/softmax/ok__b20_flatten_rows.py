"""Softmax that first moves the normalised axis to the end and flattens everything else into rows,
then does the classic max-shift / exp / row-sum on a 2-D matrix and restores the original layout.
Correct (unusual style: movedim + 2-D view, rows processed in chunks)."""

import torch


def softmax(x, dim=-1):
    moved = x.movedim(dim, -1)
    shape = moved.shape
    rows = moved.reshape(-1, shape[-1])
    pieces = []
    for chunk in rows.split(4, dim=0):  # a few rows at a time
        peak = chunk.max(dim=1, keepdim=True).values
        e = (chunk - peak).exp()
        pieces.append(e / e.sum(dim=1, keepdim=True))
    out = torch.cat(pieces, dim=0)
    return out.reshape(shape).movedim(-1, dim)
