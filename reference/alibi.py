"""ALiBi, attention with linear biases (Press et al., 2022; BLOOM, MPT): a model answer.

No position embedding at all: each head subtracts from every score a penalty proportional to the distance
between the query and the key, m_h * |p - j|, with one fixed slope m_h per head. Steep slopes make a head local,
gentle ones let it read far back, and a model trained on short sequences keeps working on longer ones.
"""

import math

import torch


def alibi_slopes(num_heads):
    """float32 (num_heads,): the paper's geometric slopes, 2 ** (-8 / n) to the powers 1 .. n for n a power of 2."""
    def powers_of_two(n):  # n a power of 2: start at 2 ** (-8/n), each slope the last times the same ratio
        start = 2 ** (-8 / n)
        return [start ** (h + 1) for h in range(n)]

    p = 2 ** math.floor(math.log2(num_heads))  # the largest power of 2 not above num_heads
    # the heads beyond p take every other slope of the 2p-head sequence: they fall between the first p's
    slopes = powers_of_two(p) + powers_of_two(2 * p)[0::2][: num_heads - p]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    """q (B, H, Tq, d), k and v (B, H, Tk, d); the queries are the last Tq of the Tk positions.

    Returns out (B, H, Tq, d) and weights (B, H, Tq, Tk).
    """
    B, H, Tq, d = q.shape
    Tk = k.size(-2)
    p = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)  # (Tq, 1): query i sits at position p
    j = torch.arange(Tk, device=q.device)[None, :]  # (1, Tk)
    m = alibi_slopes(H).to(device=q.device, dtype=q.dtype)  # (H,)
    # the penalty grows with the distance, either way: a head with a steep slope reads only nearby keys
    penalty = m[:, None, None] * (p - j).abs()  # (H, Tq, Tk), >= 0
    scores = q @ k.transpose(-2, -1) / math.sqrt(d) - penalty  # (B, H, Tq, Tk): after the scaling, as it is
    if causal:
        scores = scores.masked_fill(j > p, float("-inf"))  # bottom-right: query p sees keys j <= p
    weights = torch.softmax(scores, dim=-1)  # (B, H, Tq, Tk)
    return weights @ v, weights
