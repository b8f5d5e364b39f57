import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.size(-2)
    inv = d ** -0.5

    qpos = torch.arange(Tk - Tq, Tk, device=q.device).unsqueeze(-1)  # absolute query positions
    kpos = torch.arange(Tk, device=q.device)
    dist = qpos - kpos  # (Tq, Tk), how far back each key is
    allowed = (dist >= 0) & (dist < window)

    logits = torch.einsum("bhqd,bhkd->bhqk", q, k) * inv
    logits = torch.where(allowed, logits, torch.finfo(logits.dtype).min)
    if sinks is not None:
        sink_col = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1) * inv  # MISTAKE: the sink is a raw logit, not scaled like q.k
        logits = torch.cat([logits, sink_col], dim=-1)
    probs = torch.softmax(logits, dim=-1)
    weights = probs[..., :Tk]
    return weights @ v, weights
