import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scale = 1.0 / math.sqrt(d)

    out = torch.zeros(B, H, Tq, v.shape[-1], dtype=q.dtype, device=q.device)
    weights = torch.zeros(B, H, Tq, Tk, dtype=q.dtype, device=q.device)

    for i in range(Tq):
        pos = Tk - Tq + i
        start = max(pos - window, 0)
        s = q[:, :, i:i + 1] @ k[:, :, start:pos + 1].transpose(-1, -2) * scale  # MISTAKE
        if sinks is not None:
            s = torch.cat([s, sinks.view(1, H, 1, 1).expand(B, H, 1, 1)], dim=-1)
        p = torch.softmax(s, dim=-1)
        if sinks is not None:
            p = p[..., :-1]
        weights[:, :, i:i + 1, start:pos + 1] = p
        out[:, :, i:i + 1] = p @ v[:, :, start:pos + 1]
    return out, weights
