import torch


def causal_mask(tq, tk=None, device=None):
    if tk is None:
        tk = tq
    rows = torch.arange(tq, device=device).unsqueeze(-1)  # (tq, 1)
    cols = torch.arange(tk, device=device).unsqueeze(0)   # (1, tk)
    allowed = cols <= rows  # MISTAKE: top-left, the query's offset tk - tq is left out
    return allowed


def padding_mask(lengths, t):
    positions = torch.arange(t, device=lengths.device).expand(lengths.shape[0], t)
    return positions < lengths.unsqueeze(1)


def attention_mask(lengths, t, causal=False):
    keep = padding_mask(lengths, t).view(-1, 1, 1, t)  # keys only
    keep = keep.expand(-1, 1, t, t)
    if causal:
        keep = keep & causal_mask(t, device=lengths.device)
    return keep
