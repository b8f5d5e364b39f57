"""causal_mask built as the complement of an upper triangle starting at the bottom-right diagonal.
Mistake: triu(diagonal=tk - tq) includes the diagonal itself, so its complement hides each query's
own key (query i cannot see key i + tk - tq); the padding and combined masks are right."""

import torch


def causal_mask(tq, tk=None, device=None):
    if tk is None:
        tk = tq
    blocked = torch.ones(tq, tk, device=device).triu(diagonal=tk - tq).bool()  # MISTAKE
    return ~blocked


def padding_mask(lengths, t):
    idx = torch.arange(t, device=lengths.device)
    return idx.expand(len(lengths), t) < lengths.view(-1, 1)


def attention_mask(lengths, t, causal=False):
    out = padding_mask(lengths, t).view(-1, 1, 1, t).repeat(1, 1, t, 1)
    if causal:
        i = torch.arange(t, device=lengths.device)
        out = out & (i.view(1, 1, 1, t) <= i.view(1, 1, t, 1))
    return out
