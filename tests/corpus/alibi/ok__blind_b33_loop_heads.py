import math

import torch


def _pow2_slopes(n):
    start = 2 ** (-(2 ** -(math.log2(n) - 3)))
    return [start * start ** i for i in range(n)]


def _get_slopes(n):
    if math.log2(n).is_integer():
        return _pow2_slopes(n)
    p = 2 ** math.floor(math.log2(n))
    return _pow2_slopes(p) + _get_slopes(2 * p)[0::2][: n - p]


def alibi_slopes(num_heads):
    return torch.tensor(_get_slopes(num_heads), dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    slopes = alibi_slopes(H).to(device=q.device, dtype=q.dtype)
    q_pos = torch.arange(Tq, device=q.device) + (Tk - Tq)
    k_pos = torch.arange(Tk, device=q.device)
    dist = (q_pos[:, None] - k_pos[None, :]).abs().to(q.dtype)
    outs, probs = [], []
    for h in range(H):
        s = q[:, h] @ k[:, h].transpose(-1, -2) / math.sqrt(d)
        s = s - slopes[h] * dist
        if causal:
            s = s.masked_fill(k_pos[None, :] > q_pos[:, None], float("-inf"))
        p = torch.softmax(s, dim=-1)
        probs.append(p)
        outs.append(p @ v[:, h])
    return torch.stack(outs, dim=1), torch.stack(probs, dim=1)
