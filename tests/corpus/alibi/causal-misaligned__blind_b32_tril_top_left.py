import math

import torch


def alibi_slopes(num_heads):
    n = 1 << (num_heads.bit_length() - 1)
    first = 2.0 ** (-8.0 * torch.arange(1, n + 1, dtype=torch.float64) / n)
    if n == num_heads:
        return first.to(torch.float32)
    second = 2.0 ** (-8.0 * torch.arange(1, 2 * n + 1, 2, dtype=torch.float64) / (2 * n))
    return torch.cat([first, second[: num_heads - n]]).to(torch.float32)


def alibi_attention(q, k, v, causal=True):
    Tq, d = q.shape[-2:]
    Tk = k.shape[-2]
    H = q.shape[1]
    pq = torch.arange(Tq, device=q.device) + Tk - Tq
    pk = torch.arange(Tk, device=q.device)
    bias = -alibi_slopes(H).to(q)[:, None, None] * (pq[:, None] - pk[None, :]).abs().to(q.dtype)
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d) + bias
    if causal:
        keep = torch.tril(torch.ones(Tq, Tk, dtype=torch.bool, device=q.device))  # MISTAKE
        scores = scores.masked_fill(~keep, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.einsum("bhqk,bhkd->bhqd", weights, v), weights
