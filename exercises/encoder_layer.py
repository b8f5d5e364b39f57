"""Exercise encoder-layer: a Transformer encoder layer (target: 8 minutes).

Write two classes below: your own multi-head attention, then the layer built from it.

MultiHeadAttention, exactly as in the mha exercise (the checker may also call it on its own):
    __init__(d_model, num_heads, bias=True)
        self.W_q, self.W_k, self.W_v, self.W_o: nn.Linear(d_model, d_model, bias=bias)
    forward(query, key, value, mask=None) -> (out (B, Tq, D), weights (B, H, Tq, Tk))
        mask: None, or bool (B, Tq, Tk) or (B, 1, Tk), True = "may attend"; it has no head axis.
        Head h uses features [h*d, (h+1)*d), d = D // H; scores are divided by sqrt(d).

EncoderLayer:
    __init__(d_model, num_heads, d_ff, norm_first=False)
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff); self.ff2 = nn.Linear(d_ff, d_model); a ReLU between them
        self.norm1, self.norm2 = nn.LayerNorm(d_model)
        (exactly these names: the checker copies the reference's weights into them)
    forward(x, mask=None) -> (B, T, D)
        x (B, T, D); mask as in MultiHeadAttention, handed on to the self-attention.

    norm_first=False, post-LN (the original Transformer):
        x = norm1(x + self_attn(x));  x = norm2(x + ff(x))
    norm_first=True, pre-LN (GPT-2 and most LLMs):
        x = x + self_attn(norm1(x));  x = x + ff(norm2(x))
    where ff(x) = ff2(relu(ff1(x))). Both are checked.
    Keep the input's dtype and device. No dropout.
    Not allowed: nn.Transformer* (nn.TransformerEncoderLayer...), nn.MultiheadAttention,
    F.scaled_dot_product_attention.

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


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        # TODO: self_attn, ff1, ff2, norm1, norm2
        raise NotImplementedError("write EncoderLayer.__init__")

    def forward(self, x, mask=None):
        # TODO: two sub-layers, each with its residual and its LayerNorm (where depends on norm_first)
        raise NotImplementedError("write EncoderLayer.forward")
