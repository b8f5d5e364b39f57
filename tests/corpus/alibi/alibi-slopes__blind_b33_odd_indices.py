import math

import torch


def get_slopes(n):
    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio ** i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (
        get_slopes_power_of_2(closest_power_of_2)
        + get_slopes(2 * closest_power_of_2)[1::2][: n - closest_power_of_2]  # MISTAKE
    )


def alibi_slopes(num_heads):
    return torch.tensor(get_slopes(num_heads), dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    n_heads, q_len, head_dim = q.shape[1], q.shape[2], q.shape[3]
    k_len = k.shape[2]
    slopes = alibi_slopes(n_heads).to(q)
    context = torch.arange(q_len, device=q.device)[:, None] + (k_len - q_len)
    memory = torch.arange(k_len, device=q.device)[None, :]
    relative_position = (memory - context).abs()
    alibi = -slopes[:, None, None] * relative_position[None]
    attn = q @ k.transpose(2, 3) * (1.0 / math.sqrt(head_dim))
    attn = attn + alibi[None]
    if causal:
        attn = attn.masked_fill(memory > context, float("-inf"))
    attn = attn.softmax(-1)
    return attn @ v, attn
