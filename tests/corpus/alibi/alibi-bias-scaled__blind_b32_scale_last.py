import math

import torch
import torch.nn.functional as F


def alibi_slopes(num_heads: int) -> torch.Tensor:
    def _p2(n):
        start = 2.0 ** (-2.0 ** -(math.log2(n) - 3))
        return [start ** (k + 1) for k in range(n)]

    if num_heads & (num_heads - 1):
        c = 1 << (num_heads.bit_length() - 1)
        vals = _p2(c) + _p2(2 * c)[::2][: num_heads - c]
    else:
        vals = _p2(num_heads)
    return torch.tensor(vals, dtype=torch.float32)


def alibi_attention(q, k, v, causal: bool = True):
    H, Tq, d = q.shape[1:]
    Tk = k.shape[2]
    pos_q = torch.arange(Tk - Tq, Tk, device=q.device)
    pos_k = torch.arange(Tk, device=q.device)
    distance = (pos_q[:, None] - pos_k[None, :]).abs().to(q.dtype)
    m = alibi_slopes(H).to(q.dtype).to(q.device)
    logits = torch.einsum("bhid,bhjd->bhij", q, k)
    logits = logits - torch.einsum("h,ij->hij", m, distance)
    logits = logits * d ** -0.5  # MISTAKE
    if causal:
        logits = logits.masked_fill(pos_k[None, :] > pos_q[:, None], float("-inf"))
    attn = F.softmax(logits, dim=-1)
    return torch.einsum("bhij,bhjd->bhid", attn, v), attn
