"""Exercise sdpa: scaled dot-product attention (target: 3 minutes).

Write scaled_dot_product_attention(q, k, v, mask=None) -> (out, weights).

    q        (..., Tq, d)    any number of leading dims (batch, heads, ...)
    k        (..., Tk, d)
    v        (..., Tk, dv)
    mask     None, or bool broadcastable to (..., Tq, Tk).
             True means "this query may attend to this key" (the boolean attn_mask convention of
             torch.nn.functional.scaled_dot_product_attention; nn.MultiheadAttention uses the opposite).
             A hidden key must get exactly zero probability.
    out      (..., Tq, dv)
    weights  (..., Tq, Tk), the probabilities after the softmax

Scores are q @ k^T / sqrt(d), d being the last dim of q and k. Keep the input's dtype and device.
A query that sees no key at all is never graded (zeros, uniform or NaN are all accepted).
Not allowed: torch.nn.functional.scaled_dot_product_attention.

Check it with:  attn-drill check
"""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    # TODO: scores, scale, mask, softmax, weighted sum of v
    raise NotImplementedError("write scaled_dot_product_attention")
