"""ALiBi whose attention turns a Python list of slopes into a tensor with torch.tensor(list), which stays on the CPU and is never moved to the inputs' device."""
import math

import torch


def _slopes_list(n: int) -> list[float]:
    def pow2(m):
        start = 2.0 ** (-8.0 / m)
        return [start ** (i + 1) for i in range(m)]

    if math.log2(n).is_integer():
        return pow2(n)
    p = 2 ** math.floor(math.log2(n))
    return pow2(p) + pow2(2 * p)[0::2][: n - p]


def alibi_slopes(num_heads: int) -> torch.Tensor:
    return torch.tensor(_slopes_list(num_heads), dtype=torch.float32)


def alibi_attention(q, k, v, causal: bool = True):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    slopes = torch.tensor(_slopes_list(H), dtype=q.dtype).view(H, 1, 1)  # CPU, never moved
    p = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    j = torch.arange(Tk, device=q.device)[None, :]
    dist = (p - j).abs().to(q.dtype)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d) - slopes * dist
    if causal:
        scores = scores.masked_fill(j > p, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return w @ v, w
