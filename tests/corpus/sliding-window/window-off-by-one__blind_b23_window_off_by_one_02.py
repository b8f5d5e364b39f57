import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scores = torch.matmul(q, k.transpose(-1, -2)) * d ** -0.5

    p = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    j = torch.arange(Tk, device=q.device)[None, :]
    first = p - window + 1  # oldest key still in the window
    visible = (j > first) & (j <= p)  # MISTAKE
    scores = torch.where(visible, scores, torch.finfo(scores.dtype).min)

    if sinks is not None:
        sink = sinks.to(scores.dtype).reshape(1, H, 1, 1).expand(B, H, Tq, 1)
        scores = torch.cat([scores, sink], dim=-1)
    weights = scores.softmax(-1)
    if sinks is not None:
        weights = weights[..., :-1]
    out = weights @ v
    return out, weights
