import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scale = d ** -0.5

    out = q.new_zeros(B, H, Tq, v.shape[-1])
    weights = q.new_zeros(B, H, Tq, Tk)

    for i in range(Tq):
        p = i + Tk - Tq
        lo, hi = max(0, p - window + 1), min(Tk, p + window)
        s = torch.einsum("bhd,bhjd->bhj", q[:, :, i], k[:, :, lo:hi]) * scale  # MISTAKE
        lse = torch.logsumexp(s, dim=-1, keepdim=True)
        if sinks is not None:
            lse = torch.logaddexp(lse, sinks.view(1, H, 1).expand_as(lse))
        w = torch.exp(s - lse)
        weights[:, :, i, lo:hi] = w
        out[:, :, i] = torch.einsum("bhj,bhjd->bhd", w, v[:, :, lo:hi])
    return out, weights
