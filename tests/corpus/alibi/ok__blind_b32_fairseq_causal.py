import math

import torch


def alibi_slopes(num_heads):
    def pow2_slopes(n):
        start = 2 ** (-8 / n)
        return [start ** (i + 1) for i in range(n)]

    if math.log2(num_heads).is_integer():
        vals = pow2_slopes(num_heads)
    else:
        p = 2 ** math.floor(math.log2(num_heads))
        vals = pow2_slopes(p) + pow2_slopes(2 * p)[0::2][: num_heads - p]
    return torch.tensor(vals, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    m = alibi_slopes(H).to(device=q.device, dtype=q.dtype).view(1, H, 1, 1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    key_pos = torch.arange(Tk, device=q.device)
    query_pos = torch.arange(Tq, device=q.device) + (Tk - Tq)
    if causal:
        # fairseq: under the causal mask m*j is -m*(p-j) plus a per-row constant
        scores = scores + m * key_pos.to(q.dtype).view(1, 1, 1, Tk)
        allowed = key_pos[None, :] <= query_pos[:, None]
        scores = scores.masked_fill(~allowed, float("-inf"))
    else:
        dist = (query_pos[:, None] - key_pos[None, :]).abs().to(q.dtype)
        scores = scores - m * dist
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
