"""A correct function, but a leftover benchmark loop at module level (no __main__ guard) runs forever on import."""

import math
import time

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


_q = torch.randn(2, 4, 8, 16)
_n, _t0 = 0, time.perf_counter()
while True:  # "benchmark until I hit Ctrl-C"
    scaled_dot_product_attention(_q, _q, _q)
    _n += 1
    if _n % 10_000 == 0:
        print(f"{_n / (time.perf_counter() - _t0):.0f} calls/s")
