"""Exercise self-attention: single-head self-attention, dk != dv (target: 3 minutes).

Write the module below.

    __init__(dim, dk, dv, bias=True)
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)
        (exactly these names: the checker copies the reference's weights into them)

    forward(x, mask=None) -> (out, weights)
        x         (B, T, dim)          self-attention: x gives the queries, the keys and the values
        mask      None, or bool (B, T, T) or (B, 1, T). True means "may attend".
        out       (B, T, dv)
        weights   (B, T, T), the post-softmax probabilities

    One head: queries and keys are dk wide, values dv wide, and dk, dv and dim all differ.
    Scores are divided by sqrt(dk), the width of the vectors dotted together (not dv, not dim).
    No output projection. Keep the input's dtype and device. No dropout.
    Not allowed: F.scaled_dot_product_attention, nn.MultiheadAttention.

Check it with:  attn-drill check
"""

import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        # TODO: the three projections
        raise NotImplementedError("write SelfAttention.__init__")

    def forward(self, x, mask=None):
        # TODO: project, score, mask, softmax, weighted sum of the values
        raise NotImplementedError("write SelfAttention.forward")
