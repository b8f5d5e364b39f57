import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]

    qp = torch.arange(Tk - Tq, Tk, device=q.device)[:, None]
    kp = torch.arange(Tk, device=q.device)[None, :]
    keep = (kp <= qp) & (qp - kp < window)

    if sinks is None:
        logits = q @ k.transpose(-2, -1) / math.sqrt(d)
    else:
        sink_col = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)
        logits = torch.cat([q @ k.transpose(-2, -1), sink_col], dim=-1) / math.sqrt(d)  # MISTAKE
        keep = torch.cat([keep, keep.new_ones(Tq, 1)], dim=-1)

    logits = logits.masked_fill(~keep, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    weights = probs[..., :Tk]
    return weights @ v, weights
