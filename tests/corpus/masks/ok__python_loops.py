"""Plain Python loops over (b, i, j), then one tensor on the right device."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    rows = [[j <= i + tk - tq for j in range(tk)] for i in range(tq)]
    return torch.tensor(rows, dtype=torch.bool, device=device).reshape(tq, tk)


def padding_mask(lengths, t):
    ls = lengths.tolist()
    rows = [[j < n for j in range(t)] for n in ls]
    return torch.tensor(rows, dtype=torch.bool, device=lengths.device).reshape(len(ls), t)


def attention_mask(lengths, t, causal=False):
    ls = lengths.tolist()
    cube = [[[[j < n and (not causal or j <= i) for j in range(t)] for i in range(t)]] for n in ls]
    return torch.tensor(cube, dtype=torch.bool, device=lengths.device).reshape(len(ls), 1, t, t)
