"""ALiBi whose (H, Tq, Tk) bias is built from CPU slopes and CPU aranges and only cast to q's dtype (.to(q.dtype)), never moved, before it is added to the scores."""
import math

import torch


def alibi_slopes(num_heads: int) -> torch.Tensor:
    def pow2(n):
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    if math.log2(num_heads).is_integer():
        vals = pow2(num_heads)
    else:
        p = 2 ** math.floor(math.log2(num_heads))
        vals = pow2(p) + pow2(2 * p)[0::2][: num_heads - p]
    return torch.tensor(vals, dtype=torch.float32)


def alibi_attention(q, k, v, causal: bool = True):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    pos_q = torch.arange(Tk - Tq, Tk)[:, None]
    pos_k = torch.arange(Tk)[None, :]
    rel = (pos_q - pos_k).abs().to(q.dtype)
    bias = -alibi_slopes(H).to(q.dtype)[:, None, None] * rel  # CPU, (H, Tq, Tk)
    if causal:
        bias = bias.masked_fill(pos_k > pos_q, float("-inf"))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d) + bias
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
