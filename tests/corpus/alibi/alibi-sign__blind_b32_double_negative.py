import math

import torch


def alibi_slopes(num_heads):
    closest = 2 ** math.floor(math.log2(num_heads))
    base = 2.0 ** (-8.0 / closest)
    slopes = [base ** (i + 1) for i in range(closest)]
    if closest < num_heads:
        base2 = 2.0 ** (-8.0 / (2 * closest))
        slopes += [base2 ** (2 * i + 1) for i in range(num_heads - closest)]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    n_head, t_q, d_head = q.shape[1], q.shape[2], q.shape[3]
    t_k = k.shape[2]
    query_pos = torch.arange(t_q, device=q.device) + (t_k - t_q)
    key_pos = torch.arange(t_k, device=q.device)
    dist = (query_pos.view(-1, 1) - key_pos.view(1, -1)).abs().to(q.dtype)
    slopes = alibi_slopes(n_head).to(dtype=q.dtype, device=q.device)
    alibi = -(slopes.view(n_head, 1, 1) * dist)          # (H, Tq, Tk), <= 0
    logits = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d_head)
    logits = logits - alibi  # MISTAKE
    if causal:
        visible = key_pos.view(1, -1) <= query_pos.view(-1, 1)
        logits = logits.masked_fill(~visible, float("-inf"))
    probs = logits.softmax(dim=-1)
    return torch.einsum("bhqk,bhkd->bhqd", probs, v), probs
