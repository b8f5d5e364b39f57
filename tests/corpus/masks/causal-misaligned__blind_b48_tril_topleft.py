import torch


def causal_mask(tq, tk=None, device=None):
    if tk is None:
        tk = tq
    return torch.tril(torch.ones(tq, tk, dtype=torch.bool, device=device))  # MISTAKE: top-left; needs diagonal=tk - tq


def padding_mask(lengths, t):
    positions = torch.arange(t, device=lengths.device).unsqueeze(0)  # (1, t)
    return positions < lengths.unsqueeze(1)  # (B, t)


def attention_mask(lengths, t, causal=False):
    keys_ok = padding_mask(lengths, t)  # (B, t)
    mask = keys_ok.view(-1, 1, 1, t).repeat(1, 1, t, 1)  # (B, 1, t, t): same key row for every query
    if causal:
        mask = mask & causal_mask(t, device=lengths.device).view(1, 1, t, t)
    return mask
