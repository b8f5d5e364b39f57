import math

import torch


def alibi_slopes(num_heads):
    def geo(n):
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]

    if (num_heads & (num_heads - 1)) == 0:
        s = geo(num_heads)
    else:
        p = 2 ** int(math.floor(math.log2(num_heads)))
        s = geo(p) + geo(2 * p)[::2][: num_heads - p]
    return torch.tensor(s, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    rows = torch.arange(Tq, device=q.device).unsqueeze(1) + Tk - Tq
    cols = torch.arange(Tk, device=q.device).unsqueeze(0)
    dist = (rows - cols).abs().to(q.dtype)
    m = alibi_slopes(H).to(q.device, q.dtype).reshape(1, H, 1, 1)
    scores = scores + m * dist  # MISTAKE
    if causal:
        scores = scores.masked_fill(cols > rows, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    return out, weights
