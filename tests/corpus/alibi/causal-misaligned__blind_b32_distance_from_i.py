import math

import torch


def alibi_slopes(num_heads):
    def pow2(n):
        r = 2 ** (-8 / n)
        return [r ** (h + 1) for h in range(n)]

    if num_heads & (num_heads - 1) == 0:
        return torch.tensor(pow2(num_heads), dtype=torch.float32)
    c = 2 ** int(math.log2(num_heads))
    return torch.tensor(pow2(c) + pow2(2 * c)[::2][: num_heads - c], dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    i = torch.arange(Tq, device=q.device)[:, None]
    j = torch.arange(Tk, device=q.device)[None, :]
    dist = (i - j).abs().to(q.dtype)  # MISTAKE
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    scores = scores - alibi_slopes(H).to(q.device, q.dtype).view(H, 1, 1) * dist
    if causal:
        scores = scores.masked_fill(j > i + (Tk - Tq), float("-inf"))
    attn = torch.softmax(scores, dim=-1)
    return attn @ v, attn
