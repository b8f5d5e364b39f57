import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]

    s = q @ k.transpose(-2, -1) / math.sqrt(d)
    qpos = torch.arange(Tk - Tq, Tk, device=q.device).unsqueeze(-1)
    kpos = torch.arange(Tk, device=q.device).unsqueeze(0)
    visible = (kpos <= qpos) & (kpos > qpos - window)
    s = s.masked_fill(~visible, float("-inf"))

    # stable softmax, with the sink as an extra term in the denominator
    m = s.amax(dim=-1, keepdim=True)
    e = (s - m).exp()
    z = e.sum(dim=-1, keepdim=True)
    if sinks is not None:
        z = z + sinks.exp().view(1, H, 1, 1)  # MISTAKE
    w = e / z

    return w @ v, w
