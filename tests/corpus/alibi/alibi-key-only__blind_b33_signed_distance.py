import math

import torch


def alibi_slopes(num_heads):
    p = 2 ** (num_heads.bit_length() - 1)
    slopes = torch.pow(2.0, -8.0 * torch.arange(1, p + 1, dtype=torch.float64) / p)
    if p < num_heads:
        finer = torch.pow(2.0, -4.0 * torch.arange(1, 2 * p + 1, dtype=torch.float64) / p)
        slopes = torch.cat([slopes, finer[0::2][: num_heads - p]])
    return slopes.to(torch.float32)


def alibi_attention(q, k, v, causal=True):
    d = q.shape[-1]
    n_q, n_k = q.shape[-2], k.shape[-2]
    m = alibi_slopes(q.shape[1]).to(device=q.device, dtype=q.dtype)
    p = torch.arange(n_q, device=q.device, dtype=q.dtype) + (n_k - n_q)
    j = torch.arange(n_k, device=q.device, dtype=q.dtype)
    distance = p[:, None] - j[None, :]
    bias = -m[:, None, None] * distance  # MISTAKE
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d) + bias
    if causal:
        scores = torch.where(j[None, :] <= p[:, None], scores, torch.full_like(scores, float("-inf")))
    weights = torch.softmax(scores, dim=-1)
    return torch.einsum("bhqk,bhkd->bhqd", weights, v), weights
