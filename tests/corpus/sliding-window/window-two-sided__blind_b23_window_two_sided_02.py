import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scale = 1.0 / math.sqrt(d)
    out = torch.zeros_like(q)
    weights = torch.zeros(B, H, Tq, Tk, dtype=q.dtype, device=q.device)

    for i in range(Tq):
        p = i + Tk - Tq
        lo = max(p - window + 1, 0)
        hi = min(p + window, Tk)  # MISTAKE
        s = torch.einsum("bhd,bhnd->bhn", q[:, :, i], k[:, :, lo:hi]) * scale
        if sinks is not None:
            s = torch.cat([s, sinks.view(1, H, 1).expand(B, H, 1)], dim=-1)
        w = torch.softmax(s, dim=-1)
        if sinks is not None:
            w = w[..., :-1]
        weights[:, :, i, lo:hi] = w
        out[:, :, i] = torch.einsum("bhn,bhnd->bhd", w, v[:, :, lo:hi])
    return out, weights
