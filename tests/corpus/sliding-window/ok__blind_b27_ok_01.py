import math
import torch
import torch.nn.functional as F


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    # query i lives at absolute position i + (Tk - Tq)
    qpos = torch.arange(Tq, device=q.device).unsqueeze(1) + (Tk - Tq)
    kpos = torch.arange(Tk, device=q.device).unsqueeze(0)
    allowed = (kpos <= qpos) & (kpos > qpos - window)
    scores = scores.masked_fill(~allowed, float("-inf"))
    if sinks is not None:
        sink_col = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1).to(scores.dtype)
        probs = F.softmax(torch.cat([scores, sink_col], dim=-1), dim=-1)
        weights = probs[..., :Tk]
    else:
        weights = F.softmax(scores, dim=-1)
    out = weights @ v
    return out, weights
