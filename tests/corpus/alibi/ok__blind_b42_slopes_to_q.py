"""ALiBi whose slopes and distances are built on the CPU and then moved to q's device and dtype with .to(q) before they meet the scores."""
import math

import torch


def _pow2_slopes(n):
    return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]


def alibi_slopes(num_heads: int) -> torch.Tensor:
    if num_heads & (num_heads - 1) == 0:
        vals = _pow2_slopes(num_heads)
    else:
        p = 2 ** int(math.floor(math.log2(num_heads)))
        vals = _pow2_slopes(p) + _pow2_slopes(2 * p)[0::2][: num_heads - p]
    return torch.tensor(vals, dtype=torch.float32)


def alibi_attention(q, k, v, causal: bool = True):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    # helper tensors made on the CPU ...
    p = torch.arange(Tq).unsqueeze(-1) + (Tk - Tq)
    j = torch.arange(Tk).unsqueeze(0)
    dist = (p - j).abs()
    slopes = alibi_slopes(H)
    # ... and moved (device and dtype) before they touch q
    bias = -(slopes.to(q)[:, None, None] * dist.to(q))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d) + bias
    if causal:
        allowed = (j <= p).to(q.device)
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
