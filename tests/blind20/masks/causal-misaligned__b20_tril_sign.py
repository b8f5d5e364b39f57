"""causal_mask via tril with an offset between the two lengths, padding via arange, combined mask via
broadcasting. Mistake: the tril diagonal is tq - tk instead of tk - tq, so when tq != tk the queries
are aligned from the wrong end (with a KV cache the newest query no longer sees every key); when
tq == tk it is the plain lower triangle and right."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    base = torch.ones((tq, tk), dtype=torch.bool, device=device)
    return torch.tril(base, diagonal=tq - tk)  # MISTAKE


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(-1)


def attention_mask(lengths, t, causal=False):
    m = padding_mask(lengths, t)[:, None, None, :].expand(-1, -1, t, -1)
    if causal:
        m = m & causal_mask(t, t, device=lengths.device)
    return m
