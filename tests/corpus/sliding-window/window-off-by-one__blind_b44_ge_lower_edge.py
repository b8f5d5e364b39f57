import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.size(-2)
    qpos = torch.arange(Tk - Tq, Tk, device=q.device).unsqueeze(-1)
    kpos = torch.arange(Tk, device=q.device).unsqueeze(0)
    allowed = (kpos <= qpos) & (kpos >= qpos - window)  # MISTAKE
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
    scores = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
    if sinks is not None:
        s = sinks.reshape(1, H, 1, 1).expand(B, H, Tq, 1)
        scores = torch.cat([scores, s], dim=-1)
    w = torch.softmax(scores, dim=-1)
    w = w[..., :Tk]
    return torch.matmul(w, v), w
