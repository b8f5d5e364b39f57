"""Masks whose index tensors are created directly with device= (the given device, or lengths.device)."""
import torch


def causal_mask(tq: int, tk: int | None = None, device=None) -> torch.Tensor:
    if tk is None:
        tk = tq
    i = torch.arange(tq, device=device).unsqueeze(-1)
    j = torch.arange(tk, device=device).unsqueeze(0)
    return j <= i + (tk - tq)


def padding_mask(lengths: torch.Tensor, t: int) -> torch.Tensor:
    j = torch.arange(t, device=lengths.device)
    return j.unsqueeze(0) < lengths.unsqueeze(-1)


def attention_mask(lengths: torch.Tensor, t: int, causal: bool = False) -> torch.Tensor:
    m = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        m = m & causal_mask(t, device=lengths.device)
    return m
