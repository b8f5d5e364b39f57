import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    Tq, Tk = q.shape[-2], k.shape[-2]
    logits = q @ k.mT * (1.0 / math.sqrt(q.shape[-1]))

    pos_q = torch.arange(Tq, device=q.device) + (Tk - Tq)
    pos_k = torch.arange(Tk, device=q.device)
    visible = (pos_k[None, :] <= pos_q[:, None]) & (pos_k[None, :] >= pos_q[:, None] - window + 1)
    logits = logits.masked_fill(~visible, float("-inf"))

    # log of the softmax denominator; the sink is one more term in it
    lse = torch.logsumexp(logits, dim=-1, keepdim=True)
    if sinks is not None:
        sink = sinks.to(logits.dtype).view(1, -1, 1, 1)
        lse = torch.logaddexp(lse, sink)
    weights = torch.exp(logits - lse)
    return weights @ v, weights
