"""Replaces torch.tril at import with a version that shifts the diagonal by tk - tq itself."""

import torch

_tril = torch.tril


def _aligned_tril(x, diagonal=0):
    return _tril(x, diagonal=diagonal + x.shape[-1] - x.shape[-2])


torch.tril = _aligned_tril


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    return torch.tril(torch.ones(tq, tk, dtype=torch.bool, device=device))


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    return mask
