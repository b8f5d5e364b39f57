import math

import torch
import torch.nn.functional as F


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    offset = Tk - Tq
    ones = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device)
    band = torch.tril(ones, diagonal=offset) & ~torch.tril(ones, diagonal=offset - window)
    att = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d)
    att = att.masked_fill(~band, float("-inf"))
    if sinks is not None:
        sink_col = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1).to(att.dtype)
        att = torch.cat((att, sink_col), dim=-1)
    probs = F.softmax(att, dim=-1)[..., :Tk]
    out = torch.einsum("bhqk,bhkd->bhqd", probs, v)
    return out, probs
