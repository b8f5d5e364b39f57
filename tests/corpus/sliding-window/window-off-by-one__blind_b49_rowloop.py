import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    shift = Tk - Tq
    scale = 1.0 / math.sqrt(d)
    probs = q.new_zeros(B, H, Tq, Tk)
    rows = []
    for i in range(Tq):
        pos = i + shift                      # absolute position of this query
        start = max(pos - window, 0)  # MISTAKE: first visible key should be pos - window + 1
        keys = k[:, :, start : pos + 1]      # (B, H, n, d)
        vals = v[:, :, start : pos + 1]
        logits = torch.einsum("bhd,bhnd->bhn", q[:, :, i], keys) * scale
        if sinks is not None:
            logits = torch.cat([logits, sinks.view(1, H, 1).expand(B, H, 1)], dim=-1)
        w = torch.softmax(logits, dim=-1)
        if sinks is not None:
            w = w[..., :-1]
        probs[:, :, i, start : pos + 1] = w
        rows.append(torch.einsum("bhn,bhnd->bhd", w, vals))
    return torch.stack(rows, dim=2), probs
