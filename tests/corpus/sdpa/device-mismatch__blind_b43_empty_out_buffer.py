"""Attention whose output is assembled row by row in a torch.empty buffer made without device=, so it comes back on the CPU whatever the inputs' device."""
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    Tq = w.shape[-2]
    lead = torch.broadcast_shapes(w.shape[:-2], v.shape[:-2])
    out = torch.empty(*lead, Tq, v.shape[-1], dtype=v.dtype)  # default device
    for i in range(Tq):
        out[..., i, :] = (w[..., i:i + 1, :] @ v).squeeze(-2)
    return out, w
