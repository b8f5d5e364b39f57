import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scale = 1 / math.sqrt(d)
    shift = Tk - Tq  # queries are the last Tq positions

    weights = q.new_zeros(B, H, Tq, Tk)
    out = q.new_zeros(B, H, Tq, v.shape[-1])
    for i in range(Tq):
        p = i + shift
        lo = max(0, p - window)  # MISTAKE: keeps window + 1 keys; the first visible key is p - window + 1
        kk = k[:, :, lo:p + 1]
        vv = v[:, :, lo:p + 1]
        row = torch.einsum("bhd,bhjd->bhj", q[:, :, i], kk) * scale
        if sinks is not None:
            row = torch.cat([row, sinks.view(1, H, 1).expand(B, H, 1)], dim=-1)
        row = row - row.max(dim=-1, keepdim=True).values
        e = row.exp()
        w = (e / e.sum(dim=-1, keepdim=True))[..., : p + 1 - lo]  # sink column dropped
        weights[:, :, i, lo:p + 1] = w
        out[:, :, i] = torch.einsum("bhj,bhjd->bhd", w, vv)
    return out, weights
