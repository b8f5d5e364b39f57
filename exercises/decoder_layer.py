"""Exercise decoder-layer: a Transformer decoder layer with cross-attention (target: 10 minutes).

Write two classes below: your own multi-head attention, then the layer built from it.

MultiHeadAttention, exactly as in the mha exercise (the checker may also call it on its own):
    __init__(d_model, num_heads, bias=True)
        self.W_q, self.W_k, self.W_v, self.W_o: nn.Linear(d_model, d_model, bias=bias)
    forward(query, key, value, mask=None) -> (out (B, Tq, D), weights (B, H, Tq, Tk))
        mask: None, or bool (B, Tq, Tk) or (B, 1, Tk), True = "may attend"; it has no head axis.
        Head h uses features [h*d, (h+1)*d), d = D // H; scores are divided by sqrt(d).

DecoderLayer:
    __init__(d_model, num_heads, d_ff, norm_first=False)
        self.self_attn, self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff); self.ff2 = nn.Linear(d_ff, d_model); a ReLU between them
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d_model)
        (exactly these names: the checker copies the reference's weights into them)
    forward(x, memory, tgt_mask=None, memory_mask=None) -> (B, Tq, D)
        x       (B, Tq, D)   the decoder's tokens
        memory  (B, Tk, D)   the encoder's output; Tk may differ from Tq
        tgt_mask     None, or bool (B, Tq, Tq) or (B, 1, Tq): keys self-attention must also hide
        memory_mask  None, or bool (B, Tq, Tk) or (B, 1, Tk): keys cross-attention must hide
        True = "may attend", as in MultiHeadAttention.

    Self-attention is always causal: the layer builds that mask itself (query i sees keys j <= i)
    and also hides the keys where tgt_mask is False. A (1, Tq, Tq) mask is fine: it broadcasts
    over the batch. Cross-attention takes its queries from x, its keys and values from memory.
    norm_first=False, post-LN:
        x = norm1(x + self_attn(x));  x = norm2(x + cross_attn(x, memory));  x = norm3(x + ff(x))
    norm_first=True, pre-LN (memory itself is not normalised):
        x = x + self_attn(norm1(x));  x = x + cross_attn(norm2(x), memory);  x = x + ff(norm3(x))
    where ff(x) = ff2(relu(ff1(x))). Both are checked.
    Keep the input's dtype and device; make the causal mask on x's device. No dropout.
    Not allowed: nn.Transformer* (nn.TransformerDecoderLayer...), nn.MultiheadAttention,
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


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        # TODO: self_attn, cross_attn, ff1, ff2, norm1, norm2, norm3
        raise NotImplementedError("write DecoderLayer.__init__")

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        # TODO: causal self-attention, cross-attention over memory, feed-forward;
        #       each with its residual and its LayerNorm (where depends on norm_first)
        raise NotImplementedError("write DecoderLayer.forward")
