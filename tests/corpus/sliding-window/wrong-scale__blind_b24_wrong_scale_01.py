import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]

    scores = q @ k.transpose(-2, -1) / d  # MISTAKE

    pos_q = torch.arange(Tq, device=q.device) + (Tk - Tq)
    pos_k = torch.arange(Tk, device=q.device)
    dist = pos_q[:, None] - pos_k[None, :]
    scores = scores.masked_fill((dist < 0) | (dist >= window), float("-inf"))

    if sinks is not None:
        scores = torch.cat([scores, sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)], dim=-1)
    attn = torch.softmax(scores, dim=-1)[..., :Tk]
    return attn @ v, attn
