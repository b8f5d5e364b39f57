import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    idx = torch.arange(Tk, device=q.device)
    qpos = idx[Tk - Tq:]
    band = (qpos[:, None] - idx[None, :]).abs() < window  # MISTAKE

    att = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(d)
    att = att.masked_fill(~band, float("-inf"))
    if sinks is not None:
        col = sinks.reshape(1, H, 1, 1).expand(B, H, Tq, 1)
        att = torch.cat((att, col), dim=-1)
    att = torch.softmax(att, dim=-1)[..., :Tk]
    out = torch.einsum("bhij,bhjd->bhid", att, v)
    return out, att
