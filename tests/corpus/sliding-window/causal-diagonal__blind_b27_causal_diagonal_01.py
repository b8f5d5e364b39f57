import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    *_, Tq, d = q.shape
    Tk = k.size(-2)
    offset = Tk - Tq
    scale = 1.0 / d ** 0.5

    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    rows = torch.arange(Tq, device=q.device)[:, None] + offset
    cols = torch.arange(Tk, device=q.device)[None, :]
    diff = rows - cols
    keep = (diff > 0) & (diff < window)  # MISTAKE
    scores = torch.where(keep, scores, torch.full_like(scores, torch.finfo(scores.dtype).min))

    if sinks is not None:
        extra = sinks.reshape(1, -1, 1, 1).expand(*scores.shape[:-1], 1)
        scores = torch.cat((scores, extra), dim=-1)
    probs = torch.softmax(scores, dim=-1)
    weights = probs[..., :Tk]
    out = torch.matmul(weights, v)
    return out, weights
