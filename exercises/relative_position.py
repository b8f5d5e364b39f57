"""Exercise relative-position: self-attention with relative-position keys, Shaw et al. 2018 (target: 8 minutes).

Write the module below.

    __init__(d_model, num_heads, max_distance)
        self.W_q, self.W_k, self.W_v, self.W_o: nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, d)     d = d_model // num_heads
        (exactly these names: the checker copies the reference's weights into them)

    forward(x, mask=None) -> (out, weights)
        x         (B, T, D)            self-attention
        mask      None, or bool (B, T, T) or (B, 1, T). True means "may attend".
                  It has no head axis: making it broadcast over the heads is part of the exercise.
        out       (B, T, D)
        weights   (B, H, T, T), the post-softmax probabilities of every head

    scores[b, h, i, j] = (q_i . k_j + q_i . r_ij) / sqrt(d)
        r_ij = rel_k(clip(j - i, -max_distance, max_distance) + max_distance)
    j - i is key j's offset from query i: a key in the past has a negative offset. Offsets further
    than max_distance are clipped to it (T may be much longer than 2 * max_distance + 1). rel_k is
    shared by all heads; the relative term is on the keys only (none on the values). Heads split as
    in multi-head attention: head h owns features [h*d, (h+1)*d).
    Keep the input's dtype and device. No dropout.
    Not allowed: nn.MultiheadAttention, F.scaled_dot_product_attention.

Check it with:  attn-drill check
"""

import math

import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__()
        # TODO: the four projections and the relative-position keys
        raise NotImplementedError("write RelativeSelfAttention.__init__")

    def forward(self, x, mask=None):
        # TODO: project, split heads, content and position scores, mask, softmax, merge, project out
        raise NotImplementedError("write RelativeSelfAttention.forward")
