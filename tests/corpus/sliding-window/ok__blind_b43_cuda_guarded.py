"""Sliding-window attention whose window mask is built on the CPU and moved with .cuda(q.device) when q.is_cuda (or .to(q.device) for any other device), masked with a torch.finfo(dtype).min Python scalar."""
import math

import torch


def sliding_window_attention(q, k, v, window: int, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    p = torch.arange(Tq)[:, None] + (Tk - Tq)
    j = torch.arange(Tk)[None, :]
    allowed = (j <= p) & (j > p - window)  # CPU
    if q.is_cuda:
        allowed = allowed.cuda(q.device)
    elif allowed.device != q.device:
        allowed = allowed.to(q.device)
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
    neg = torch.finfo(scores.dtype).min
    scores = scores.masked_fill(~allowed, neg)
    if sinks is None:
        w = torch.softmax(scores, dim=-1)
    else:
        s = sinks.to(scores.dtype).view(1, H, 1, 1).expand(B, H, Tq, 1)
        full = torch.cat([scores, s], dim=-1)
        mx = full.amax(dim=-1, keepdim=True)
        e = torch.exp(full - mx)
        w = (e / e.sum(dim=-1, keepdim=True))[..., :Tk]
    return w @ v, w
