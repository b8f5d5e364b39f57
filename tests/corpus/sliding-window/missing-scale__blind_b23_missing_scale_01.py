import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    logits = q @ k.transpose(-2, -1)  # MISTAKE

    pos_q = torch.arange(Tq, device=q.device) + (Tk - Tq)
    pos_k = torch.arange(Tk, device=q.device)
    visible = (pos_k[None, :] <= pos_q[:, None]) & (pos_k[None, :] > pos_q[:, None] - window)
    logits = logits.masked_fill(~visible, float("-inf"))

    lse = torch.logsumexp(logits, dim=-1, keepdim=True)
    if sinks is not None:
        lse = torch.logaddexp(lse, sinks.view(1, H, 1, 1))
    weights = torch.exp(logits - lse)
    return weights @ v, weights
