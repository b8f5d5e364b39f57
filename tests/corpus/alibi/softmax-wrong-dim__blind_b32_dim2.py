import math

import torch


def alibi_slopes(num_heads):
    closest = 2 ** math.floor(math.log2(num_heads))
    base = 2.0 ** (-8.0 / closest)
    slopes = [base ** (h + 1) for h in range(closest)]
    if closest != num_heads:
        extra = 2.0 ** (-8.0 / (2 * closest))
        slopes.extend(extra ** (2 * h + 1) for h in range(num_heads - closest))
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(d)
    pos_q = torch.arange(Tk - Tq, Tk, device=q.device).unsqueeze(-1)
    pos_k = torch.arange(Tk, device=q.device).unsqueeze(0)
    m = alibi_slopes(H).to(device=q.device, dtype=q.dtype)
    scores = scores - m.view(1, H, 1, 1) * (pos_q - pos_k).abs().to(q.dtype)
    if causal:
        scores = scores.masked_fill(pos_k > pos_q, float("-inf"))
    weights = scores.softmax(dim=2)  # MISTAKE
    out = torch.matmul(weights, v)
    return out, weights
