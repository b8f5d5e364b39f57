import math

import torch


def alibi_slopes(num_heads):
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), dtype=torch.float64)
    powers = torch.arange(1, 1 + closest_power_of_2, dtype=torch.int32)
    slopes = torch.pow(base, powers)
    if closest_power_of_2 != num_heads:
        extra_base = torch.tensor(2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3))), dtype=torch.float64)
        num_remaining_heads = min(closest_power_of_2, num_heads - closest_power_of_2)
        extra_powers = torch.arange(1, 1 + 2 * num_remaining_heads, 2, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra_base, extra_powers)], dim=0)
    return slopes.to(torch.float32)


def alibi_attention(q, k, v, causal=True):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    qpos = torch.arange(Tk - Tq, Tk, device=q.device).view(Tq, 1)
    kpos = torch.arange(Tk, device=q.device).view(1, Tk)
    dist = (qpos - kpos).abs()
    slopes = alibi_slopes(H).to(device=q.device, dtype=q.dtype).view(H, 1, 1)
    alibi = slopes * dist  # MISTAKE: sign lost: the bias must be -m * |p - j| so distant keys are penalised
    scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(d)) + alibi
    if causal:
        scores = scores.masked_fill(kpos > qpos, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.matmul(probs, v), probs
