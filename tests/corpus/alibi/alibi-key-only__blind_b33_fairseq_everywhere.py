import math

import torch


def get_slopes(n):
    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    c = 2 ** math.floor(math.log2(n))
    return get_slopes_power_of_2(c) + get_slopes(2 * c)[0::2][: n - c]


def alibi_slopes(num_heads):
    return torch.tensor(get_slopes(num_heads), dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    bsz, heads, tgt_len, head_dim = q.shape
    src_len = k.size(2)
    slopes = alibi_slopes(heads).to(q)
    # fairseq: the bias only needs the key index, softmax drops the per-row part
    alibi = slopes.unsqueeze(1).unsqueeze(1) * torch.arange(src_len, device=q.device).unsqueeze(0).unsqueeze(0).expand(heads, -1, -1)  # MISTAKE
    attn_weights = torch.bmm(
        q.reshape(bsz * heads, tgt_len, head_dim) * head_dim ** -0.5,
        k.reshape(bsz * heads, src_len, head_dim).transpose(1, 2),
    ).view(bsz, heads, tgt_len, src_len)
    attn_weights = attn_weights + alibi.unsqueeze(0)
    if causal:
        future = torch.triu(
            torch.ones(tgt_len, src_len, dtype=torch.bool, device=q.device),
            diagonal=src_len - tgt_len + 1,
        )
        attn_weights = attn_weights.masked_fill(future, float("-inf"))
    attn_probs = torch.softmax(attn_weights, dim=-1)
    return torch.matmul(attn_probs, v), attn_probs
