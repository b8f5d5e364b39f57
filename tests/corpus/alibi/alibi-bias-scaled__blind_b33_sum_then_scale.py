import math

import torch


def alibi_slopes(num_heads):
    def geo(n):
        return [2 ** (-8 * (h + 1) / n) for h in range(n)]

    if num_heads & (num_heads - 1) == 0:
        return torch.tensor(geo(num_heads), dtype=torch.float32)
    p = 2 ** math.floor(math.log2(num_heads))
    return torch.tensor(geo(p) + geo(2 * p)[0::2][: num_heads - p], dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    batch, heads, tq, dim = q.shape
    tk = k.shape[-2]
    m = alibi_slopes(heads).to(q.device, q.dtype).view(1, heads, 1, 1)
    qi = torch.arange(tq, device=q.device).view(tq, 1) + (tk - tq)
    kj = torch.arange(tk, device=q.device).view(1, tk)
    bias = -m * (qi - kj).abs()
    scores = (torch.matmul(q, k.transpose(-1, -2)) + bias) / math.sqrt(dim)  # MISTAKE
    if causal:
        scores = scores.masked_fill(kj > qi, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = torch.matmul(probs, v)
    return out, probs
