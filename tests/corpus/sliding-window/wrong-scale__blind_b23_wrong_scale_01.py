import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    att = torch.einsum("bhid,bhjd->bhij", q, k) / d  # MISTAKE

    rows = torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
    cols = torch.arange(Tk, device=q.device)[None, :]
    dist = rows - cols
    ok = (dist >= 0) & (dist < window)
    att = att.masked_fill(~ok, float("-inf"))

    if sinks is not None:
        att = torch.cat([att, sinks[None, :, None, None].expand(B, H, Tq, 1)], dim=-1)
    att = att.softmax(dim=-1)
    if sinks is not None:
        att = att[..., :Tk]
    return torch.einsum("bhij,bhjd->bhid", att, v), att
