import math

import torch


def alibi_slopes(num_heads):
    def pow2_slopes(n):
        base = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [base ** (i + 1) for i in range(n)]

    if math.log2(num_heads).is_integer():
        vals = pow2_slopes(num_heads)
    else:
        c = 2 ** math.floor(math.log2(num_heads))
        vals = pow2_slopes(c) + pow2_slopes(2 * c)[0::2][: num_heads - c]
    return torch.tensor(vals, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    slopes = alibi_slopes(H).to(q.device, q.dtype)
    i = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    j = torch.arange(Tk, device=q.device)[None, :]
    bias = -slopes[:, None, None] * (i - j).abs()
    scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(d) + bias
    if causal:
        scores = scores.masked_fill(j > i, float("-inf"))
    weights = torch.softmax(scores, dim=2)  # MISTAKE
    return torch.matmul(weights, v), weights
