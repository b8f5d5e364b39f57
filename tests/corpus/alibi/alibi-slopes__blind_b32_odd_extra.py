import math

import torch


def get_slopes(n):
    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + get_slopes(2 * closest)[1::2][: n - closest]  # MISTAKE


def alibi_slopes(num_heads):
    return torch.tensor(get_slopes(num_heads), dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    bsz, n_heads, q_len, head_dim = q.size()
    k_len = k.size(2)
    slopes = alibi_slopes(n_heads).to(q.device).type(q.dtype)
    p = torch.arange(q_len, device=q.device) + (k_len - q_len)
    j = torch.arange(k_len, device=q.device)
    distance = (p[:, None] - j[None, :]).abs()
    alibi = -slopes[:, None, None] * distance[None].to(q.dtype)
    attn = q @ k.transpose(-1, -2) / math.sqrt(head_dim) + alibi
    if causal:
        mask = j[None, :] <= p[:, None]
        attn = attn.masked_fill(~mask, torch.finfo(attn.dtype).min)
    attn = attn.softmax(-1)
    return attn @ v, attn
