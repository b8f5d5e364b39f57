import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    weights = q.new_zeros(B, H, Tq, Tk)
    out = q.new_zeros(B, H, Tq, v.shape[-1])
    for i in range(Tq):
        p = i + Tk - Tq
        lo = max(0, p - window + 1)
        keys = k[:, :, lo:p + 1]  # (B, H, n, d)
        vals = v[:, :, lo:p + 1]
        s = (keys @ q[:, :, i].unsqueeze(-1)).squeeze(-1) / math.sqrt(d)  # (B, H, n)
        if sinks is not None:
            s = torch.cat([s, sinks.view(1, H, 1).expand(B, H, 1).to(s.dtype)], dim=-1)
        m = s.max(dim=-1, keepdim=True).values
        e = torch.exp(s - m)
        pr = e / e.sum(dim=-1, keepdim=True)
        if sinks is not None:
            pr = pr[..., :-1]
        weights[:, :, i, lo:p + 1] = pr
        out[:, :, i] = (pr.unsqueeze(-1) * vals).sum(dim=2)
    return out, weights
