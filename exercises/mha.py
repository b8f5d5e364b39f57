"""Exercise mha: multi-head attention (target: 5 minutes).

Write the module below.

    __init__(d_model, num_heads, bias=True)
        self.W_q, self.W_k, self.W_v, self.W_o: nn.Linear(d_model, d_model, bias=bias)
        (exactly these names: the checker copies the reference's weights into them)

    forward(query, key, value, mask=None) -> (out, weights)
        query     (B, Tq, D)
        key/value (B, Tk, D)           Tk may differ from Tq (cross-attention)
        mask      None, or bool (B, Tq, Tk) or (B, 1, Tk). True means "may attend".
                  It has no head axis: making it broadcast over the heads is part of the exercise.
        out       (B, Tq, D)
        weights   (B, H, Tq, Tk), the post-softmax probabilities of every head

    H = num_heads, d = D // H. Head h uses features [h*d, (h+1)*d) of each projection, and the
    merge puts head h back at those features before W_o. Scores are divided by sqrt(d).
    Keep the input's dtype and device. No dropout.
    Not allowed: nn.MultiheadAttention, F.scaled_dot_product_attention.

Check it with:  attn-drill check
"""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        # TODO: the four projections
        raise NotImplementedError("write MultiHeadAttention.__init__")

    def forward(self, query, key, value, mask=None):
        # TODO: project, split heads, attend, merge heads, project out
        raise NotImplementedError("write MultiHeadAttention.forward")
