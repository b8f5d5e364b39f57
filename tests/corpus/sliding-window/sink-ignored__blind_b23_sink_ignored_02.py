import torch
import torch.nn.functional as F


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    offset = Tk - Tq

    logits = torch.matmul(q, k.transpose(-1, -2)) / (d ** 0.5)
    diff = (torch.arange(Tq, device=q.device)[:, None] + offset) - torch.arange(Tk, device=q.device)[None, :]
    logits = logits.masked_fill((diff < 0) | (diff >= window), float("-inf"))

    if sinks is None:
        weights = F.softmax(logits, dim=-1)
    else:
        sink_logits = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)
        probs = F.softmax(torch.cat([logits, sink_logits], dim=-1), dim=-1)
        weights = probs[..., :Tk]
        weights = weights / weights.sum(dim=-1, keepdim=True)  # MISTAKE

    return torch.matmul(weights, v), weights
