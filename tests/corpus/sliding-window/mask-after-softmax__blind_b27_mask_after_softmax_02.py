import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    ones = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device)
    future = torch.triu(ones, diagonal=Tk - Tq + 1)
    too_old = torch.tril(ones, diagonal=Tk - Tq - window)
    visible = ~(future | too_old)

    logits = torch.einsum("bhid,bhjd->bhij", q, k) / (d ** 0.5)
    if sinks is not None:
        s = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)
        logits = torch.cat([logits, s], dim=-1)
    probs = torch.softmax(logits, dim=-1)[..., :Tk]  # MISTAKE
    probs = probs.masked_fill(~visible, 0.0)
    out = torch.einsum("bhij,bhjd->bhid", probs, v)
    return out, probs
