import math

import torch
import torch.nn.functional as F


def alibi_slopes(num_heads):
    def power_of_two_slopes(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start ** (i + 1) for i in range(n)]

    if math.log2(num_heads).is_integer():
        out = power_of_two_slopes(num_heads)
    else:
        closest = 2 ** math.floor(math.log2(num_heads))
        out = power_of_two_slopes(closest) + power_of_two_slopes(2 * closest)[0::2][: num_heads - closest]
    return torch.tensor(out, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scores = torch.matmul(q, k.transpose(-2, -1))  # MISTAKE
    p = torch.arange(Tq, device=q.device).unsqueeze(1) + (Tk - Tq)
    j = torch.arange(Tk, device=q.device).unsqueeze(0)
    m = alibi_slopes(H).to(device=q.device, dtype=q.dtype).view(1, H, 1, 1)
    scores = scores - m * (p - j).abs().to(q.dtype)
    if causal:
        scores = scores.masked_fill(j > p, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights
