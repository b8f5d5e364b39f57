import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    Tq, d = q.shape[-2], q.shape[-1]
    Tk = k.shape[-2]
    s = torch.einsum("bhqd,bhkd->bhqk", q, k) * d ** -0.5

    ones = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device)
    future = torch.triu(ones, diagonal=Tk - Tq + 1)
    too_old = torch.tril(ones, diagonal=Tk - Tq - window)
    s = s.masked_fill(future | too_old, torch.finfo(s.dtype).min)

    m = s.amax(dim=-1, keepdim=True)
    if sinks is not None:
        sink = sinks.to(s.dtype)[None, :, None, None]
        m = torch.maximum(m, sink)
    e = torch.exp(s - m)
    denom = e.sum(dim=-1, keepdim=True)
    if sinks is not None:
        denom = denom + torch.exp(sink - m)
    w = e / denom
    return torch.einsum("bhqk,bhkd->bqhd", w, v).flatten(2), w  # MISTAKE
