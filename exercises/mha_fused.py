"""Exercise mha-fused: multi-head self-attention with one fused q/k/v projection (target: 5 minutes).

Write the module below.

    __init__(d_model, num_heads, bias=True)
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o   = nn.Linear(d_model, d_model, bias=bias)
        (exactly these names: the checker copies the reference's weights into them)

    forward(x, mask=None) -> (out, weights)
        x         (B, T, D)            self-attention: x gives the queries, the keys and the values
        mask      None, or bool (B, T, T) or (B, 1, T). True means "may attend".
                  It has no head axis: making it broadcast over the heads is part of the exercise.
        out       (B, T, D)
        weights   (B, H, T, T), the post-softmax probabilities of every head

    W_qkv's output is [q | k | v] along the last axis, each D wide (the layout of
    nn.MultiheadAttention's in_proj_weight). Inside each of q, k, v, head h uses features
    [h*d, (h+1)*d), with H = num_heads and d = D // H; the merge puts head h back at those features
    before W_o. Scores are divided by sqrt(d). Keep the input's dtype and device. No dropout.
    Not allowed: nn.MultiheadAttention, F.scaled_dot_product_attention.

Check it with:  attn-drill check
"""

import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        # TODO: the fused projection and the output projection
        raise NotImplementedError("write FusedSelfAttention.__init__")

    def forward(self, x, mask=None):
        # TODO: project once, split q/k/v, split heads, attend, merge heads, project out
        raise NotImplementedError("write FusedSelfAttention.forward")
