import math

import torch
import torch.nn.functional as F


def alibi_slopes(num_heads):
    closest = 2 ** math.floor(math.log2(num_heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest) - 3))), dtype=torch.float32)
    powers = torch.arange(1, 1 + closest, dtype=torch.int32)
    slopes = torch.pow(base, powers)
    if closest != num_heads:
        extra_base = torch.tensor(2 ** (-(2 ** -(math.log2(2 * closest) - 3))), dtype=torch.float32)
        n_rem = min(closest, num_heads - closest)
        extra_powers = torch.arange(1, 1 + 2 * n_rem, 2, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra_base, extra_powers)], dim=0)
    return slopes


def alibi_attention(q, k, v, causal=True):
    bsz, n_head, q_len, head_dim = q.shape
    kv_len = k.shape[-2]
    slopes = alibi_slopes(n_head).to(device=q.device, dtype=q.dtype)
    rows = torch.arange(kv_len - q_len, kv_len, device=q.device).view(q_len, 1)
    cols = torch.arange(kv_len, device=q.device).view(1, kv_len)
    rel = cols - rows
    alibi = slopes.view(n_head, 1, 1) * -rel.abs()
    alibi = alibi.unsqueeze(0).expand(bsz, -1, -1, -1).reshape(bsz * n_head, q_len, kv_len)
    qf = q.reshape(bsz * n_head, q_len, head_dim)
    kf = k.reshape(bsz * n_head, kv_len, head_dim)
    scores = torch.baddbmm(alibi, qf, kf.transpose(1, 2), beta=1.0, alpha=1.0 / math.sqrt(head_dim))
    scores = scores.view(bsz, n_head, q_len, kv_len)
    if causal:
        scores = scores.masked_fill(cols > rows, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    out = torch.matmul(weights, v)
    return out, weights
