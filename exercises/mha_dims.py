"""Exercise mha-dims: multi-head attention with given per-head widths (target: 6 minutes).

Write the module below.

    __init__(dim, num_heads, dk, dv, bias=True)
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)
        (exactly these names: the checker copies the reference's weights into them)

    forward(query, key, value, mask=None) -> (out, weights)
        query     (B, Tq, dim)
        key/value (B, Tk, dim)         Tk may differ from Tq (cross-attention)
        mask      None, or bool (B, Tq, Tk) or (B, 1, Tk). True means "may attend".
                  It has no head axis: making it broadcast over the heads is part of the exercise.
        out       (B, Tq, dim)
        weights   (B, H, Tq, Tk), the post-softmax probabilities of every head

    H = num_heads. The head widths are given, not dim // H: num_heads * dk need not equal dim, and
    dk != dv. Head h uses features [h*dk, (h+1)*dk) of W_q's and W_k's outputs and [h*dv, (h+1)*dv)
    of W_v's; the merge puts head h back at [h*dv, (h+1)*dv) before W_o. Scores are divided by
    sqrt(dk). Keep the input's dtype and device. No dropout.
    Not allowed: nn.MultiheadAttention, F.scaled_dot_product_attention.

Check it with:  attn-drill check
"""

import math

import torch
from torch import nn


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim: int, num_heads: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        # TODO: the four projections
        raise NotImplementedError("write MultiHeadAttentionDims.__init__")

    def forward(self, query, key, value, mask=None):
        # TODO: project, split heads (dk for q and k, dv for v), attend, merge heads, project out
        raise NotImplementedError("write MultiHeadAttentionDims.forward")
