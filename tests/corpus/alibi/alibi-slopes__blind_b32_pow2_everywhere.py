import math

import torch


def alibi_slopes(num_heads):
    h = torch.arange(1, num_heads + 1, dtype=torch.float32)
    return torch.pow(2.0, -8.0 * h / num_heads)  # MISTAKE


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
    qi = torch.arange(Tq, device=q.device).view(Tq, 1) + (Tk - Tq)
    kj = torch.arange(Tk, device=q.device).view(1, Tk)
    dist = (qi - kj).abs().to(q.dtype)
    slopes = alibi_slopes(H).to(q.device, q.dtype).view(1, H, 1, 1)
    scores = scores - slopes * dist
    if causal:
        scores = scores.masked_fill(kj > qi, float("-inf"))
    attn = torch.softmax(scores, dim=-1)
    return torch.matmul(attn, v), attn
