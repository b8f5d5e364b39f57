import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scale = d ** -0.5

    out = q.new_zeros(B, H, Tq, v.shape[-1])
    weights = q.new_zeros(B, H, Tq, Tk)

    for i in range(Tq):
        p = i + Tk - Tq
        lo = max(0, p - window + 1)
        ks = k[:, :, lo:p + 1]
        vs = v[:, :, lo:p + 1]
        s = torch.einsum("bhd,bhjd->bhj", q[:, :, i], ks) * scale
        lse = torch.logsumexp(s, dim=-1, keepdim=True)
        if sinks is not None:
            lse = torch.logaddexp(lse, sinks.view(1, H, 1).expand_as(lse))
        w = torch.exp(s - lse)
        weights[:, :, i, lo:p + 1] = w
        out[:, :, i] = torch.einsum("bhj,bhjd->bhd", w, vs)

    return out, weights
