"""Softmax that centres each slice by its mean before exponentiating (the candidate's idea of
"making it stable"). Mistake: the per-slice shift is the mean, not the max, so a slice with a large
spread (entries of size 1e4) still overflows exp to inf (inf/inf = NaN), and a slice containing
-inf has mean -inf, so x - mean gives NaN everywhere in it."""

import torch


def softmax(x, dim=-1):
    centre = x.mean(dim=dim, keepdim=True)
    e = torch.exp(x - centre)  # MISTAKE
    return e / e.sum(dim=dim, keepdim=True)
