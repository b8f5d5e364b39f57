import math

import torch


def alibi_slopes(num_heads):
    def pow2(n):
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]

    lo = 2 ** int(math.log2(num_heads))
    if lo == num_heads:
        return torch.tensor(pow2(lo), dtype=torch.float32)
    return torch.tensor(pow2(lo) + pow2(2 * lo)[0::2][: num_heads - lo], dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    slopes = alibi_slopes(H).to(dtype=q.dtype, device=q.device)
    q_pos = torch.arange(Tq, device=q.device) + (Tk - Tq)
    k_pos = torch.arange(Tk, device=q.device)
    rel = (k_pos[None, :] - q_pos[:, None]).abs()
    bias = slopes.view(H, 1, 1) * rel  # MISTAKE
    scores = q @ k.transpose(-1, -2) / math.sqrt(d)
    scores = scores + bias.unsqueeze(0)
    if causal:
        mask = k_pos[None, :] <= q_pos[:, None]
        scores = scores.masked_fill(~mask, float("-inf"))
    attn = torch.softmax(scores, dim=-1)
    return attn @ v, attn
