"""The scores under no_grad."""

import math

import torch


def alibi_slopes(num_heads):
    def geo(n):
        r = 2 ** (-8 / n)
        return [r ** (i + 1) for i in range(n)]

    p = 2 ** int(math.log2(num_heads))
    s = geo(p)
    if p < num_heads:
        s = s + geo(2 * p)[0::2][: num_heads - p]
    return torch.tensor(s, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    qpos = torch.arange(Tk - Tq, Tk, device=q.device).view(Tq, 1)
    kpos = torch.arange(Tk, device=q.device).view(1, Tk)
    dist = (qpos - kpos).abs()
    m = alibi_slopes(H).to(q.device, q.dtype).view(H, 1, 1)
    with torch.no_grad():
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
    s = s - m * dist
    if causal:
        s = s.masked_fill(kpos > qpos, float("-inf"))
    w = torch.softmax(s, dim=-1)
    return torch.matmul(w, v), w
