import math

import torch


def _geometric(n):
    # m_h = 2^(-8 (h+1) / n), h = 0..n-1
    return 2.0 ** (-8.0 * torch.arange(1, n + 1, dtype=torch.float64) / n)


def alibi_slopes(num_heads):
    if num_heads & (num_heads - 1) == 0:
        return _geometric(num_heads).float()
    p = 1
    while p * 2 < num_heads:
        p *= 2
    extra = _geometric(2 * p)[::2][: num_heads - p]
    return torch.cat([_geometric(p), extra]).float()


def alibi_attention(q, k, v, causal=True):
    H, Tq, d = q.shape[-3], q.shape[-2], q.shape[-1]
    Tk = k.shape[-2]
    dev = q.device
    p = torch.arange(Tq, device=dev).unsqueeze(-1) + Tk - Tq
    j = torch.arange(Tk, device=dev).unsqueeze(0)
    slopes = alibi_slopes(H).to(dev, q.dtype)[:, None, None]
    bias = -slopes * (p - j).abs().to(q.dtype)

    s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(d)) + bias
    if causal:
        keep = torch.tril(torch.ones(Tq, Tk, dtype=torch.bool, device=dev), diagonal=Tk - Tq)
        s = torch.where(keep, s, torch.full_like(s, float("-inf")))
    w = torch.softmax(s, dim=-1)
    return torch.matmul(w, v), w
