import math

import torch


def alibi_slopes(num_heads):
    def geometric(n):
        first = 2.0 ** (-8.0 / n)
        return [first ** (i + 1) for i in range(n)]

    if math.log2(num_heads).is_integer():
        return torch.tensor(geometric(num_heads), dtype=torch.float32)
    closest = 2 ** int(math.floor(math.log2(num_heads)))
    extra = geometric(2 * closest)[0::2][: num_heads - closest]
    return torch.tensor(geometric(closest) + extra, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    slopes = alibi_slopes(H).to(q.device, q.dtype).view(H, 1, 1)

    q_pos = torch.arange(Tk - Tq, Tk, device=q.device).view(-1, 1)
    k_pos = torch.arange(Tk, device=q.device).view(1, -1)
    bias = -slopes * (q_pos - k_pos).abs()  # (H, Tq, Tk)

    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + bias
    if causal:
        keep = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device).tril()  # MISTAKE: top-left, ignores Tk - Tq
        scores = scores.masked_fill(~keep, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return probs @ v, probs
