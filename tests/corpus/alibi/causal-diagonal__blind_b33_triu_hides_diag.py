import math

import torch


def alibi_slopes(num_heads):
    def _pow2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start ** (i + 1) for i in range(n)]

    if math.log2(num_heads).is_integer():
        return torch.tensor(_pow2(num_heads), dtype=torch.float32)
    p = 2 ** math.floor(math.log2(num_heads))
    return torch.tensor(_pow2(p) + _pow2(2 * p)[0::2][: num_heads - p], dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.size(-2)
    off = Tk - Tq
    m = alibi_slopes(H).to(q).view(H, 1, 1)
    pos = torch.arange(Tq, device=q.device).view(-1, 1) + off
    key = torch.arange(Tk, device=q.device).view(1, -1)
    scores = q.matmul(k.transpose(-2, -1)).div(math.sqrt(d)) - m * (pos - key).abs()
    if causal:
        blocked = torch.triu(torch.ones(Tq, Tk, dtype=torch.bool, device=q.device), diagonal=off)  # MISTAKE
        scores = scores.masked_fill(blocked, torch.finfo(q.dtype).min)
    attn = scores.softmax(dim=-1)
    return attn.matmul(v), attn
