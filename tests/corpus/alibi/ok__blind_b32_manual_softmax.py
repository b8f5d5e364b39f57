import math

import torch


def alibi_slopes(num_heads):
    def slopes_for(n):
        ratio = 2.0 ** (-8.0 / n)
        out = []
        cur = ratio
        for _ in range(n):
            out.append(cur)
            cur *= ratio
        return out

    log2n = math.log2(num_heads)
    if log2n == int(log2n):
        res = slopes_for(num_heads)
    else:
        closest = 2 ** int(log2n)
        res = slopes_for(closest)
        more = slopes_for(2 * closest)
        res += [more[i] for i in range(0, 2 * (num_heads - closest), 2)]
    return torch.tensor(res, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    batch, heads, n_q, dim = q.shape
    n_k = k.shape[2]
    # relative offset j - p (<= 0 for past keys), p = i + n_k - n_q
    rel = (torch.arange(n_k, device=q.device)[None, :]
           - torch.arange(n_q, device=q.device)[:, None]
           - (n_k - n_q))
    m = alibi_slopes(heads).to(q)
    score = q.matmul(k.transpose(-2, -1)) / dim ** 0.5
    score = score - m.view(-1, 1, 1) * rel.abs().to(q.dtype)
    if causal:
        score = score.masked_fill(rel > 0, float("-inf"))
    score = score - score.amax(dim=-1, keepdim=True)
    e = score.exp()
    attn = e / e.sum(dim=-1, keepdim=True)
    return attn.matmul(v), attn
