"""Every mask is built from torch.arange(..., device=...) on the device of `lengths` (or the given `device`), so nothing lands on the default device."""
import torch


def causal_mask(tq: int, tk: int | None = None, device=None) -> torch.Tensor:
    if tk is None:
        tk = tq
    i = torch.arange(tq, device=device).unsqueeze(1)
    j = torch.arange(tk, device=device).unsqueeze(0)
    return j <= i + (tk - tq)


def padding_mask(lengths: torch.Tensor, t: int) -> torch.Tensor:
    j = torch.arange(t, device=lengths.device)
    return j.unsqueeze(0) < lengths.unsqueeze(1)


def attention_mask(lengths: torch.Tensor, t: int, causal: bool = False) -> torch.Tensor:
    keys = padding_mask(lengths, t)[:, None, None, :]  # (B, 1, 1, t)
    m = keys.expand(-1, 1, t, t).clone()
    if causal:
        m = m & causal_mask(t, device=lengths.device)
    return m
