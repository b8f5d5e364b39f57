import math

import torch


def alibi_slopes(num_heads):
    # geometric sequence of the next power of two, cut to num_heads
    n = 2 ** math.ceil(math.log2(num_heads))  # MISTAKE
    slopes = [2 ** (-8 * (h + 1) / n) for h in range(n)]
    return torch.tensor(slopes[:num_heads], dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    m = alibi_slopes(H).to(q.device).to(q.dtype).reshape(1, H, 1, 1)
    pos_q = torch.arange(Tk - Tq, Tk, device=q.device).reshape(Tq, 1)
    pos_k = torch.arange(Tk, device=q.device).reshape(1, Tk)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
    scores = scores - m * (pos_q - pos_k).abs()
    if causal:
        scores = scores.masked_fill(pos_k > pos_q, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights
