"""Exercise alibi: attention with linear biases, as in BLOOM and MPT (target: 6 minutes).

Write two functions below.

alibi_slopes(num_heads) -> float32 tensor (num_heads,)
    Press et al.'s slopes. For n heads, n a power of 2: m_h = 2 ** (-8 * (h + 1) / n), h = 0 .. n-1.
    Otherwise, with p the largest power of 2 below n: the p slopes for p heads, then the first n - p of
    the slopes for 2p heads taken at even indices (0, 2, 4, ...), as the paper's get_slopes does.
alibi_attention(q, k, v, causal=True) -> (out, weights)
    q (B, H, Tq, d); k, v (B, H, Tk, d), Tq <= Tk; the queries are the last Tq of the Tk positions:
    query i sits at p = i + Tk - Tq.
    scores = q @ k^T / sqrt(d) - m_h * |p - j|   (the bias added after the scaling, not scaled itself)
    causal: query i sees keys j <= p (bottom-right); else every key.
    out (B, H, Tq, d); weights (B, H, Tq, Tk), each row summing to 1.
    Slopes from alibi_slopes (float32) cast to the inputs' dtype are fine. Keep the input's dtype and device.
    Not allowed: F.scaled_dot_product_attention, nn.MultiheadAttention.

Check it with:  attn-drill check
"""

import math

import torch


def alibi_slopes(num_heads):
    # TODO: the geometric slopes, with the paper's rule for a head count that is not a power of 2
    raise NotImplementedError("write alibi_slopes")


def alibi_attention(q, k, v, causal=True):
    # TODO: scaled scores, minus each head's slope times the distance |p - j|, the causal mask, softmax
    raise NotImplementedError("write alibi_attention")
