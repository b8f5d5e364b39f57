import math

import torch


def alibi_slopes(num_heads):
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), dtype=torch.float32)
    powers = torch.arange(1, 1 + closest_power_of_2, dtype=torch.int32)
    slopes = torch.pow(base, powers)
    if closest_power_of_2 != num_heads:
        extra_base = torch.tensor(
            2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3))), dtype=torch.float32
        )
        num_remaining_heads = min(closest_power_of_2, num_heads - closest_power_of_2)
        extra_powers = torch.arange(1, 1 + 2 * num_remaining_heads, 2, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra_base, extra_powers)], dim=0)
    return slopes


def build_bias(num_heads, q_len, k_len, device, dtype):
    offset = k_len - q_len
    i = torch.arange(q_len, device=device).view(-1, 1) + offset
    j = torch.arange(k_len, device=device).view(1, -1)
    distance = (i - j).abs().to(dtype)
    slopes = alibi_slopes(num_heads).to(device=device, dtype=dtype)
    return -slopes.view(num_heads, 1, 1) * distance          # (H, Tq, Tk)


def alibi_attention(q, k, v, causal=True):
    _, h, tq, dh = q.shape
    tk = k.size(-2)
    logits = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(dh)
    logits = logits + build_bias(h, tq, tk, q.device, q.dtype)
    if causal:
        blocked = torch.triu(
            torch.ones(tq, tk, dtype=torch.bool, device=q.device), diagonal=tk - tq + 1
        )
        logits = logits.masked_fill(blocked, float("-inf"))
    attn_weights = logits.softmax(dim=-1)
    return torch.matmul(attn_weights, v), attn_weights
