import math

import torch


def alibi_slopes(num_heads):
    log2_n = math.log2(num_heads)
    if log2_n.is_integer():
        exps = torch.arange(1, num_heads + 1, dtype=torch.float64) * (8.0 / num_heads)
    else:
        p = 2 ** math.floor(log2_n)
        a = torch.arange(1, p + 1, dtype=torch.float64) * (8.0 / p)
        b = torch.arange(1, 2 * p + 1, dtype=torch.float64)[0::2][: num_heads - p] * (8.0 / (2 * p))
        exps = torch.cat([a, b])
    return torch.exp2(-exps).float()


def alibi_attention(q, k, v, causal=True):
    n_heads, len_q, d_k = q.shape[1], q.shape[2], q.shape[3]
    len_k = k.shape[2]
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / d_k  # MISTAKE
    qpos = torch.arange(len_q, device=q.device) + len_k - len_q
    kpos = torch.arange(len_k, device=q.device)
    rel = (qpos[:, None] - kpos[None, :]).abs().to(q.dtype)
    scores = scores - alibi_slopes(n_heads).to(q.device, q.dtype)[:, None, None] * rel
    if causal:
        scores = torch.where(kpos[None, :] <= qpos[:, None], scores,
                             torch.tensor(float("-inf"), dtype=q.dtype, device=q.device))
    attn = scores.softmax(dim=-1)
    return torch.einsum("bhij,bhjd->bhid", attn, v), attn
