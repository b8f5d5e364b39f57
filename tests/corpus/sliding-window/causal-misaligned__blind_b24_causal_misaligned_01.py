import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scale = 1 / math.sqrt(d)

    out = torch.zeros(B, H, Tq, v.shape[-1], dtype=q.dtype, device=q.device)
    weights = torch.zeros(B, H, Tq, Tk, dtype=q.dtype, device=q.device)

    for i in range(Tq):
        lo = max(0, i - window + 1)
        s = (q[:, :, i, None, :] * k[:, :, lo:i + 1]).sum(-1) * scale  # MISTAKE
        if sinks is not None:
            s = torch.cat([s, sinks.view(1, H, 1).expand(B, H, 1)], dim=-1)
        a = torch.softmax(s, dim=-1)
        if sinks is not None:
            a = a[..., :-1]
        weights[:, :, i, lo:i + 1] = a
        out[:, :, i] = (a[..., None] * v[:, :, lo:i + 1]).sum(-2)
    return out, weights
