import math

import torch


def alibi_slopes(num_heads):
    def slopes_pow2(n):
        start = 2 ** (-8 / n)
        return [start ** (i + 1) for i in range(n)]

    if math.log2(num_heads).is_integer():
        out = slopes_pow2(num_heads)
    else:
        p = 2 ** math.floor(math.log2(num_heads))
        out = slopes_pow2(p) + slopes_pow2(2 * p)[::2][: num_heads - p]
    return torch.tensor(out, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    Tq, d = q.shape[-2:]
    Tk = k.shape[-2]
    slopes = alibi_slopes(q.shape[1]).to(q)
    query_pos = torch.arange(Tq, device=q.device).unsqueeze(-1) + (Tk - Tq)
    key_pos = torch.arange(Tk, device=q.device).unsqueeze(0)
    distance = (query_pos - key_pos).abs()
    alibi = -slopes[:, None, None] * distance  # penalty, <= 0
    scores = torch.matmul(q / math.sqrt(d), k.transpose(-2, -1))
    scores = scores - alibi  # MISTAKE
    if causal:
        scores = scores.masked_fill(key_pos > query_pos, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    return torch.matmul(weights, v), weights
