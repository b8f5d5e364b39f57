import math

import torch
import torch.nn.functional as F


def get_slopes(n):
    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio ** i for i in range(n)]

    if n & (n - 1) == 0:
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 1 << (n.bit_length() - 1)
    return (get_slopes_power_of_2(closest_power_of_2)
            + get_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2])


def alibi_slopes(num_heads: int) -> torch.Tensor:
    return torch.tensor(get_slopes(num_heads), dtype=torch.float32)


def alibi_attention(q, k, v, causal: bool = True):
    n_heads, q_len, head_dim = q.shape[1], q.shape[2], q.shape[3]
    k_len = k.shape[2]
    slopes = alibi_slopes(n_heads).to(q.device).to(q.dtype)

    attn = torch.einsum("bhqd,bhkd->bhqk", q, k) * head_dim ** -0.5
    pos_q = torch.arange(k_len - q_len, k_len, device=q.device)
    pos_k = torch.arange(k_len, device=q.device)
    rel = (pos_q.unsqueeze(1) - pos_k.unsqueeze(0)).abs().to(q.dtype)   # (q_len, k_len)
    attn = attn - torch.einsum("h,qk->hqk", slopes, rel)
    if causal:
        future = pos_k.unsqueeze(0) > pos_q.unsqueeze(1)
        attn = attn.masked_fill(future, torch.finfo(attn.dtype).min)
    probs = F.softmax(attn, dim=-1)
    out = torch.einsum("bhqk,bhkd->bhqd", probs, v)
    return out, probs
