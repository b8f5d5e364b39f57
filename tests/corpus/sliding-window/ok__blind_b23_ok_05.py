import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    b, h, tq, d = q.shape
    tk = k.shape[-2]
    rows = torch.arange(tq, device=q.device).view(tq, 1) + (tk - tq)
    cols = torch.arange(tk, device=q.device).view(1, tk)
    dist = rows - cols
    in_window = (dist >= 0) & (dist < window)

    s = torch.matmul(q, k.transpose(-1, -2)) / d ** 0.5
    s = s.masked_fill(~in_window, float('-inf'))

    row_max = s.amax(dim=-1, keepdim=True)
    if sinks is not None:
        sk = sinks.view(1, h, 1, 1).to(s.dtype)
        row_max = torch.maximum(row_max, sk)
    e = torch.exp(s - row_max)
    denom = e.sum(dim=-1, keepdim=True)
    if sinks is not None:
        denom = denom + torch.exp(sk - row_max)
    w = e / denom
    out = torch.matmul(w, v)
    return out, w
