import math

import torch


def alibi_slopes(num_heads):
    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio ** i for i in range(n)]

    if math.log2(num_heads).is_integer():
        s = get_slopes_power_of_2(num_heads)
    else:
        c = 2 ** math.floor(math.log2(num_heads))
        s = get_slopes_power_of_2(c) + get_slopes_power_of_2(2 * c)[0::2][: num_heads - c]
    return torch.tensor(s, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    bs, nh, tq, hd = q.shape
    tk = k.shape[-2]
    slopes = alibi_slopes(nh).to(q.device, q.dtype)
    # fairseq: softmax is shift invariant, so only the key position is needed
    alibi = slopes[:, None, None] * torch.arange(tk, device=q.device, dtype=q.dtype)[None, None, :]  # MISTAKE
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + alibi
    if causal:
        future = torch.triu(torch.ones(tq, tk, device=q.device, dtype=torch.bool), 1 + tk - tq)
        scores = scores.masked_fill(future, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.matmul(probs, v), probs
