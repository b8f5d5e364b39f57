import math

import torch


def alibi_slopes(num_heads):
    def slopes_pow2(n):
        return [2 ** (-8 * (i + 1) / n) for i in range(n)]

    lg = math.log2(num_heads)
    if lg.is_integer():
        return torch.tensor(slopes_pow2(num_heads), dtype=torch.float32)
    p = 2 ** math.floor(lg)
    return torch.tensor(slopes_pow2(p) + slopes_pow2(2 * p)[0::2][: num_heads - p],
                        dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    p = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    j = torch.arange(Tk, device=q.device)[None, :]
    bias = -alibi_slopes(H).to(q.device, q.dtype)[:, None, None] * (p - j).abs().to(q.dtype)
    scores = (q @ k.transpose(-2, -1) + bias) / math.sqrt(d)  # MISTAKE
    if causal:
        scores = scores.masked_fill(j > p, float("-inf"))
    w = scores.softmax(dim=-1)
    return w @ v, w
