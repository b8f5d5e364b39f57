import math

import torch
import torch.nn.functional as F


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d)

    qi = torch.arange(Tq, device=q.device) + Tk - Tq
    kj = torch.arange(Tk, device=q.device)
    mask = (kj[None] > qi[:, None] - window) & (kj[None] <= qi[:, None])
    scores = scores.masked_fill(mask.logical_not(), float("-inf"))

    if sinks is not None:
        sink = sinks[None, :, None, None].to(scores.dtype).expand(B, H, Tq, 1)
        scores = torch.cat([scores, sink], dim=-1)
    attn = F.softmax(scores, dim=-1)[..., :Tk]
    out = torch.einsum("bhqk,bhkd->bhqd", attn, v)
    return out, attn
