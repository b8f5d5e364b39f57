import math

import torch


def alibi_slopes(num_heads):
    def pow2(n):
        start = 2.0 ** (-8.0 / n)
        return [start ** (h + 1) for h in range(n)]

    if num_heads & (num_heads - 1) == 0:
        return torch.tensor(pow2(num_heads), dtype=torch.float32)
    low = 2 ** math.floor(math.log2(num_heads))
    return torch.tensor(pow2(low) + pow2(2 * low)[::2][: num_heads - low], dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    slopes = alibi_slopes(H).to(q.dtype).to(q.device)
    rows = torch.arange(Tq, device=q.device)
    cols = torch.arange(Tk, device=q.device)
    dist = (rows[:, None] - cols[None, :]).abs()  # MISTAKE
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    scores = scores - slopes[None, :, None, None] * dist
    if causal:
        visible = cols[None, :] <= rows[:, None] + (Tk - Tq)
        scores = scores.masked_fill(~visible, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
