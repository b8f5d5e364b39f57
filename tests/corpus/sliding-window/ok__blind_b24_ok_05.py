import math

import torch
import torch.nn.functional as F


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]

    i = torch.arange(Tq, device=q.device).unsqueeze(1) + (Tk - Tq)
    j = torch.arange(Tk, device=q.device).unsqueeze(0)
    visible = (j <= i) & (i - j <= window - 1)
    neg = torch.finfo(q.dtype).min

    outs, ws = [], []
    for h in range(H):
        s = torch.einsum("bqd,bkd->bqk", q[:, h], k[:, h]) / math.sqrt(d)
        s = torch.where(visible, s, torch.full_like(s, neg))
        if sinks is not None:
            s = torch.cat([s, sinks[h].expand(B, Tq, 1)], dim=-1)
        p = F.softmax(s, dim=-1)[..., :Tk]
        ws.append(p)
        outs.append(p @ v[:, h])
    return torch.stack(outs, dim=1), torch.stack(ws, dim=1)
