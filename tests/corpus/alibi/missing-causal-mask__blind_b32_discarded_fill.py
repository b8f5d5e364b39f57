import math

import torch


def alibi_slopes(num_heads):
    def geometric(n):
        first = 2 ** (-8 / n)
        return [first * first ** i for i in range(n)]

    if num_heads & (num_heads - 1) == 0:
        s = geometric(num_heads)
    else:
        c = 2 ** math.floor(math.log2(num_heads))
        s = geometric(c) + geometric(2 * c)[0::2][: num_heads - c]
    return torch.tensor(s, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    p = torch.arange(Tq, device=q.device).view(-1, 1) + (Tk - Tq)
    j = torch.arange(Tk, device=q.device).view(1, -1)
    slopes = alibi_slopes(H).to(q.device, q.dtype).view(1, H, 1, 1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d) - slopes * (p - j).abs().to(q.dtype)
    if causal:
        visible = j <= p
        scores.masked_fill(~visible, float("-inf"))  # MISTAKE
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
