import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    *_, Tq, d = q.shape
    Tk = k.size(2)
    offset = Tk - Tq
    scale = d ** -0.5
    att = (q @ k.transpose(2, 3)) * scale

    i = torch.arange(Tq, device=q.device)[:, None] + offset
    j = torch.arange(Tk, device=q.device)[None, :]
    keep = (j <= i) & (i - j < window)
    neg = torch.finfo(att.dtype).min
    att = torch.where(keep, att, torch.full_like(att, neg))

    if sinks is not None:
        s = sinks.reshape(1, -1, 1, 1).to(att.dtype).expand(att.shape[0], -1, Tq, 1)
        att = torch.cat((att, s), dim=-1)
    att = att.softmax(dim=-1)
    if sinks is not None:
        att = att[..., :-1]
    return att @ v, att
