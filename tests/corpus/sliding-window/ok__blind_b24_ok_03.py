import math

import torch
import torch.nn.functional as F


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    off = Tk - Tq

    # left-pad so every position has `window` slots ending at itself
    kp = F.pad(k, (0, 0, window - 1, 0))
    vp = F.pad(v, (0, 0, window - 1, 0))
    kw = kp.unfold(2, window, 1)[:, :, off:]  # (B, H, Tq, d, window)
    vw = vp.unfold(2, window, 1)[:, :, off:]

    s = torch.einsum("bhqd,bhqdw->bhqw", q, kw) / math.sqrt(d)

    # slot w of query i holds key p - window + 1 + w
    p = torch.arange(Tq, device=q.device) + off
    key_idx = p[:, None] - window + 1 + torch.arange(window, device=q.device)[None, :]
    s = s.masked_fill(key_idx < 0, float("-inf"))

    if sinks is not None:
        s = torch.cat([s, sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)], dim=-1)
    a = s.softmax(dim=-1)[..., :window]

    out = torch.einsum("bhqw,bhqdw->bhqd", a, vw)

    # scatter the window weights back to key positions (padded coordinates)
    idx = (key_idx + window - 1).expand(B, H, Tq, window)
    full = q.new_zeros(B, H, Tq, Tk + window - 1).scatter(-1, idx, a)
    weights = full[..., window - 1:]
    return out, weights
