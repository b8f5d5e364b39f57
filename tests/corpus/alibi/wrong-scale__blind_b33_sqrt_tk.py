import math

import torch


def alibi_slopes(num_heads):
    n = num_heads
    p = 1
    while 2 * p <= n:
        p *= 2
    s = [2 ** (-8 * (h + 1) / p) for h in range(p)]
    s += [2 ** (-8 * (h + 1) / (2 * p)) for h in range(0, 2 * (n - p), 2)]
    return torch.tensor(s, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    H, Tq = q.size(1), q.size(2)
    Tk = k.size(2)
    slopes = alibi_slopes(H).to(q)
    qpos = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    kpos = torch.arange(Tk, device=q.device)[None, :]
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-2)))  # MISTAKE
    att = att - slopes[:, None, None] * (qpos - kpos).abs()
    if causal:
        att = att.masked_fill(kpos > qpos, float("-inf"))
    att = torch.softmax(att, dim=-1)
    return att @ v, att
