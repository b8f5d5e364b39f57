import math

import torch


def _get_slopes(n):
    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio ** i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (get_slopes_power_of_2(closest_power_of_2)
            + _get_slopes(2 * closest_power_of_2)[1::2][: n - closest_power_of_2])  # MISTAKE: odd indices of the 2p sequence instead of even ones


def alibi_slopes(num_heads):
    return torch.tensor(_get_slopes(num_heads), dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    bsz, n_head, q_len, head_dim = q.shape
    k_len = k.shape[-2]
    slopes = alibi_slopes(n_head).to(q.device).to(q.dtype)
    context_position = torch.arange(k_len - q_len, k_len, device=q.device)[:, None]
    memory_position = torch.arange(k_len, device=q.device)[None, :]
    relative_position = memory_position - context_position                    # j - p, <= 0 in the past
    alibi = slopes.view(n_head, 1, 1) * -relative_position.abs()              # (H, Tq, Tk)

    attn = torch.einsum("bhid,bhjd->bhij", q, k) * (1.0 / math.sqrt(head_dim))
    attn = attn + alibi.unsqueeze(0)
    if causal:
        attn = attn.masked_fill(relative_position > 0, float("-inf"))
    attn = attn.softmax(-1)
    out = torch.einsum("bhij,bhjd->bhid", attn, v)
    return out, attn
