import math

import torch


def _geometric(n):
    first = 2.0 ** (-8.0 / n)
    return [first ** (h + 1) for h in range(n)]


def alibi_slopes(num_heads):
    if num_heads & (num_heads - 1) == 0:
        vals = _geometric(num_heads)
    else:
        base = 1 << (num_heads.bit_length() - 1)
        vals = _geometric(base) + _geometric(2 * base)[::2][: num_heads - base]
    return torch.tensor(vals, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    n_heads, Tq, d = q.shape[1], q.shape[2], q.shape[3]
    Tk = k.shape[-2]
    slopes = alibi_slopes(n_heads).to(q)
    qpos = torch.arange(Tk - Tq, Tk, device=q.device).view(-1, 1)
    kpos = torch.arange(Tk, device=q.device).view(1, -1)
    dist = (qpos - kpos).abs().to(q.dtype)
    logits = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d)
    logits = logits - slopes.view(1, -1, 1, 1) * dist
    if causal:
        logits = torch.where(kpos <= qpos, logits, torch.full_like(logits, float("-inf")))
    probs = logits.softmax(dim=-1)
    return probs @ v, probs
