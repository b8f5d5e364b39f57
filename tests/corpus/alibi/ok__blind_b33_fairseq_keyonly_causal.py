import math

import torch


def alibi_slopes(num_heads):
    def power_of_two(n):
        start = 2.0 ** (-8.0 / n)
        return [start ** (h + 1) for h in range(n)]

    if (num_heads & (num_heads - 1)) == 0:
        vals = power_of_two(num_heads)
    else:
        low = 1 << (num_heads.bit_length() - 1)
        vals = power_of_two(low) + power_of_two(2 * low)[0::2][: num_heads - low]
    return torch.tensor(vals, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    d = q.shape[-1]
    Tq, Tk = q.shape[-2], k.shape[-2]
    m = alibi_slopes(q.shape[1]).to(q.device, q.dtype)[:, None, None]
    key_idx = torch.arange(Tk, device=q.device, dtype=q.dtype)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    if causal:
        # fairseq: m * j differs from -m * (p - j) by a per-row constant under the mask
        future = torch.full((Tq, Tk), float("-inf"), device=q.device, dtype=q.dtype)
        future = torch.triu(future, diagonal=Tk - Tq + 1)
        scores = scores + m * key_idx + future
    else:
        qpos = torch.arange(Tq, device=q.device, dtype=q.dtype) + (Tk - Tq)
        scores = scores - m * (qpos[:, None] - key_idx[None, :]).abs()
    scores = scores - scores.amax(dim=-1, keepdim=True)
    e = scores.exp()
    weights = e / e.sum(dim=-1, keepdim=True)
    return weights @ v, weights
