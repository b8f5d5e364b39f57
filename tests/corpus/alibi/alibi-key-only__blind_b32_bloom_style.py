import math

import torch
import torch.nn.functional as F


def alibi_slopes(num_heads):
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), dtype=torch.float32)
    powers = torch.arange(1, 1 + closest_power_of_2, dtype=torch.int32)
    slopes = torch.pow(base, powers)
    if closest_power_of_2 != num_heads:
        extra_base = torch.tensor(2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3))),
                                  dtype=torch.float32)
        n_rest = min(closest_power_of_2, num_heads - closest_power_of_2)
        extra_powers = torch.arange(1, 1 + 2 * n_rest, 2, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra_base, extra_powers)], dim=0)
    return slopes


def build_alibi_tensor(num_heads, key_len, device, dtype):
    arange_tensor = torch.arange(key_len, device=device).to(dtype)[None, None, None, :]
    slopes = alibi_slopes(num_heads).to(device=device, dtype=dtype)[None, :, None, None]
    return slopes * arange_tensor  # MISTAKE


def alibi_attention(q, k, v, causal=True):
    _, H, Tq, D = q.shape
    Tk = k.shape[2]
    alibi = build_alibi_tensor(H, Tk, q.device, q.dtype)
    attn_scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(D)) + alibi
    if causal:
        q_idx = torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
        k_idx = torch.arange(Tk, device=q.device)[None, :]
        attn_scores = torch.where(k_idx <= q_idx, attn_scores, float("-inf"))
    attn_probs = F.softmax(attn_scores, dim=-1)
    return torch.matmul(attn_probs, v), attn_probs
