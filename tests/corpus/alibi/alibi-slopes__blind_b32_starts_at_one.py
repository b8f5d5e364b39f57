import math

import torch
import torch.nn.functional as F


def _pow2_slopes(n):
    start = 2 ** (-8 / n)
    return [start ** i for i in range(n)]  # MISTAKE


def alibi_slopes(num_heads):
    if num_heads & (num_heads - 1) == 0:
        return torch.tensor(_pow2_slopes(num_heads), dtype=torch.float32)
    closest = 1 << (num_heads.bit_length() - 1)
    extra = _pow2_slopes(2 * closest)[0::2][: num_heads - closest]
    return torch.tensor(_pow2_slopes(closest) + extra, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    h, tq, dk = q.shape[1:]
    tk = k.shape[2]
    logits = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(dk)
    pos_q = torch.arange(tq, device=q.device)[:, None] + tk - tq
    pos_k = torch.arange(tk, device=q.device)[None, :]
    m = alibi_slopes(h).to(device=q.device, dtype=q.dtype)[:, None, None]
    logits = logits - m * (pos_q - pos_k).abs().to(q.dtype)
    if causal:
        logits = logits.masked_fill(pos_k > pos_q, float("-inf"))
    w = F.softmax(logits, dim=-1)
    return torch.einsum("bhij,bhjd->bhid", w, v), w
