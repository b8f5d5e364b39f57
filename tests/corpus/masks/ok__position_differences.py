"""Positions as differences: key j is in the past of query i when (i + offset) - j >= 0."""

import torch


def causal_mask(tq: int, tk: int | None = None, device=None) -> torch.Tensor:
    tk = tq if tk is None else tk
    q_pos = torch.arange(tk - tq, tk, device=device)  # where the queries sit among the keys
    k_pos = torch.arange(tk, device=device)
    return (q_pos[:, None] - k_pos[None, :]) >= 0


def padding_mask(lengths: torch.Tensor, t: int) -> torch.Tensor:
    j = torch.arange(t, device=lengths.device)
    return torch.lt(j.expand(lengths.numel(), t), lengths.view(-1, 1))


def attention_mask(lengths: torch.Tensor, t: int, causal: bool = False) -> torch.Tensor:
    keep = padding_mask(lengths, t)[:, None, None, :]
    if causal:
        keep = torch.logical_and(keep, causal_mask(t, device=lengths.device))
    else:
        keep = keep.repeat(1, 1, t, 1)
    return keep
