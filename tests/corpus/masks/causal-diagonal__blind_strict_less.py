"""Uses j < i + (tk - tq), so a query cannot see its own key (the diagonal is hidden)."""
import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    rows = torch.arange(tq, device=device)[:, None] + (tk - tq)
    cols = torch.arange(tk, device=device)[None, :]
    return cols < rows


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    out = padding_mask(lengths, t)[:, None, None].expand(-1, -1, t, -1)
    if causal:
        out = out.logical_and(causal_mask(t, device=lengths.device))
    return out
