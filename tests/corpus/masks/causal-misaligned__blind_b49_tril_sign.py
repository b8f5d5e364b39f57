import torch


def causal_mask(tq, tk=None, device=None):
    if tk is None:
        tk = tq
    ones = torch.ones(tq, tk, dtype=torch.bool, device=device)
    return torch.tril(ones, diagonal=tq - tk)  # MISTAKE: offset sign flipped, should be tk - tq


def padding_mask(lengths, t):
    pos = torch.arange(t, device=lengths.device)
    return pos.unsqueeze(0) < lengths.unsqueeze(1)


def attention_mask(lengths, t, causal=False):
    B = lengths.shape[0]
    keys = padding_mask(lengths, t).view(B, 1, 1, t)
    full = keys.expand(B, 1, t, t)
    if causal:
        full = full & causal_mask(t, t, device=lengths.device)
    return full
