import math

import torch


def alibi_slopes(num_heads):
    n = 2 ** math.ceil(math.log2(num_heads))
    m = torch.arange(1, n + 1, dtype=torch.float32) * (8 / n)
    slopes = 1.0 / torch.pow(2, m)
    if n != num_heads:
        slopes = torch.cat([slopes[1::2], slopes[::2]])[:num_heads]
    return slopes


def alibi_attention(q, k, v, causal=True):
    Tq, Tk, H = q.size(-2), k.size(-2), q.size(1)
    softmax_scale = q.size(-1) ** -0.5
    rows = torch.arange(Tq, device=q.device).unsqueeze(-1) + (Tk - Tq)
    cols = torch.arange(Tk, device=q.device).unsqueeze(0)
    bias = -(alibi_slopes(H).to(q).view(1, H, 1, 1) * (rows - cols).abs())  # (1, H, Tq, Tk)
    attn = (q @ k.transpose(-2, -1) + bias) * softmax_scale  # MISTAKE: the bias is scaled with the scores; add it after the scaling
    if causal:
        attn = attn.masked_fill(cols > rows, float("-inf"))
    attn = attn.softmax(dim=-1)
    return attn @ v, attn
