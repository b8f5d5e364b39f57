import math

import torch


def alibi_slopes(num_heads):
    def geometric(n):
        first = 2.0 ** (-8.0 / n)
        return [first * first ** i for i in range(n)]

    if math.log2(num_heads) % 1 == 0:
        return torch.tensor(geometric(num_heads), dtype=torch.float32)
    p = 2 ** math.floor(math.log2(num_heads))
    return torch.tensor(geometric(p) + geometric(2 * p)[0::2][: num_heads - p], dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    b, h, tq, d = q.shape
    tk = k.shape[2]
    scale = 1.0 / math.sqrt(d)
    slopes = alibi_slopes(h).to(device=q.device, dtype=q.dtype)
    i = torch.arange(tq, device=q.device).unsqueeze(1) + tk - tq
    j = torch.arange(tk, device=q.device).unsqueeze(0)
    alibi = -slopes.view(1, h, 1, 1) * (i - j).abs()
    logits = torch.einsum("bhid,bhjd->bhij", q, k)  # MISTAKE
    logits = logits + alibi
    if causal:
        logits = logits.masked_fill(j > i, float("-inf"))
    weights = torch.softmax(logits, dim=-1)
    out = torch.einsum("bhij,bhjd->bhid", weights, v)
    return out, weights
