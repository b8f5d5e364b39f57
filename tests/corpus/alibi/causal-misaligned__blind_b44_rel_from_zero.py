import math

import torch


def alibi_slopes(num_heads):
    lower = 2 ** math.floor(math.log2(num_heads))
    ratio = 2.0 ** (-8.0 / lower)
    slopes = [ratio ** (i + 1) for i in range(lower)]
    if lower < num_heads:
        ratio2 = 2.0 ** (-8.0 / (2 * lower))
        odd_powers = [ratio2 ** (i + 1) for i in range(0, 2 * lower, 2)]
        slopes.extend(odd_powers[: num_heads - lower])
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    n_heads, tq, head_dim = q.shape[1], q.shape[2], q.shape[3]
    tk = k.shape[2]
    q_pos = torch.arange(tq, device=q.device)  # MISTAKE
    k_pos = torch.arange(tk, device=q.device)
    rel = k_pos[None, :] - q_pos[:, None]
    slopes = alibi_slopes(n_heads).to(q.device, q.dtype)
    bias = -slopes[:, None, None] * rel.abs()
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim)) + bias
    if causal:
        att = att.masked_fill(rel > 0, float("-inf"))
    att = att - att.amax(dim=-1, keepdim=True)
    e = att.exp()
    w = e / e.sum(dim=-1, keepdim=True)
    return w @ v, w
