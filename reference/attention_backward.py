"""Attention's backward pass, derived by hand: a model answer.

The forward is out = P v with P = softmax(S), S = q k^T / sqrt(d) (masked). Going back, given dout = dL/dout:
dv = P^T dout and dP = dout v^T come from the product; the softmax's Jacobian turns dP into dS, each row on its
own: dS_ij = P_ij (dP_ij - sum_l P_il dP_il). The row-sum term is there because the row's probabilities share one
normaliser: raising one score lowers every other probability of its row. Then dq = dS k / sqrt(d) and
dk = dS^T q / sqrt(d). FlashAttention's backward is this, a block at a time, with the row sum computed as
rowsum(dout * out), which is the same number.
"""

import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    """q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv), dout (..., Tq, dv); mask bool, True = may attend,
    broadcastable to (..., Tq, Tk). Returns (dq, dk, dv) shaped as q, k, v."""
    scale = 1.0 / math.sqrt(q.size(-1))
    # recompute the forward's probabilities (a real backward keeps them, or recomputes them, as flash does)
    scores = q @ k.transpose(-2, -1) * scale  # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    p = torch.softmax(scores, dim=-1)  # (..., Tq, Tk)
    dv = p.transpose(-2, -1) @ dout  # (..., Tk, dv): out = p v, so each value gets the weights that used it
    dp = dout @ v.transpose(-2, -1)  # (..., Tq, Tk)
    # the softmax's backward, row by row: the row sum is the share every probability gives up to the others
    ds = p * (dp - (dp * p).sum(dim=-1, keepdim=True))  # (..., Tq, Tk); a hidden key has p = 0, so ds = 0
    dq = ds @ k * scale  # (..., Tq, d): S = q k^T * scale
    dk = ds.transpose(-2, -1) @ q * scale  # (..., Tk, d)
    return dq, dk, dv
