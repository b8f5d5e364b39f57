import math

import torch


def alibi_slopes(num_heads):
    def seq(n):
        r = 2 ** (-8 / n)
        return [r ** i for i in range(1, n + 1)]

    closest = 2 ** int(math.log2(num_heads))
    slopes = seq(closest)
    if closest != num_heads:
        slopes += seq(2 * closest)[: num_heads - closest]  # MISTAKE
    return torch.tensor(slopes, dtype=torch.float32)


def _bias(slopes, Tq, Tk, device, dtype):
    i = torch.arange(Tq, device=device).unsqueeze(-1) + Tk - Tq
    j = torch.arange(Tk, device=device).unsqueeze(0)
    return -(slopes.to(device=device, dtype=dtype).view(-1, 1, 1) * (i - j).abs())


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scores = torch.matmul(q, k.transpose(2, 3)) / d ** 0.5
    scores = scores + _bias(alibi_slopes(H), Tq, Tk, q.device, q.dtype)
    if causal:
        i = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
        j = torch.arange(Tk, device=q.device)[None, :]
        scores = scores.masked_fill(j > i, torch.finfo(scores.dtype).min)
    w = torch.softmax(scores, -1)
    return torch.matmul(w, v), w
