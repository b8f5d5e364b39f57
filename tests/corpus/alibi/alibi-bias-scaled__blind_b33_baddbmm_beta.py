import math

import torch
import torch.nn.functional as F


def alibi_slopes(num_heads):
    closest = 2 ** math.floor(math.log2(num_heads))
    base = 2.0 ** (-(2.0 ** -(math.log2(closest) - 3)))
    slopes = [base ** p for p in range(1, closest + 1)]
    if closest != num_heads:
        extra_base = 2.0 ** (-(2.0 ** -(math.log2(2 * closest) - 3)))
        n_rem = num_heads - closest
        slopes += [extra_base ** p for p in range(1, 2 * n_rem, 2)]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    inv_norm_factor = 1.0 / math.sqrt(d)
    slopes = alibi_slopes(H).to(q.device, q.dtype)
    q_idx = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    k_idx = torch.arange(Tk, device=q.device)[None, :]
    alibi = -(slopes[:, None, None] * (q_idx - k_idx).abs())
    alibi = alibi.repeat(B, 1, 1)
    scores = torch.baddbmm(
        alibi,
        q.reshape(B * H, Tq, d),
        k.reshape(B * H, Tk, d).transpose(1, 2),
        beta=inv_norm_factor,  # MISTAKE
        alpha=inv_norm_factor,
    ).view(B, H, Tq, Tk)
    if causal:
        scores = scores.masked_fill(k_idx > q_idx, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ v, weights
