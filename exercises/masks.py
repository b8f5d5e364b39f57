"""Exercise masks: causal and padding masks (target: 4 minutes).

Write three functions. Every mask is a torch.bool tensor where True means "this query may attend to this
key" (the boolean attn_mask convention of torch.nn.functional.scaled_dot_product_attention;
nn.MultiheadAttention's masks use the opposite).

    causal_mask(tq, tk=None, device=None) -> bool (tq, tk)
        tk defaults to tq. Bottom-right aligned: query i sees key j iff j <= i + (tk - tq).
        With tq == tk that is the lower triangle, diagonal included; with a KV cache (tq < tk) the last
        query sees every key. Made on `device`.

    padding_mask(lengths, t) -> bool (B, t)
        lengths: int64 (B,), the true length of each sequence. True where j < lengths[b].

    attention_mask(lengths, t, causal=False) -> bool (B, 1, t, t), ready to broadcast over heads
        key j of sequence b is visible to query i iff j < lengths[b] (and j <= i when causal).
        Only keys are masked: padded query rows are not special-cased.

padding_mask and attention_mask return their mask on the device of `lengths`.

Check it with:  attn-drill check
"""

import torch


def causal_mask(tq, tk=None, device=None):
    # TODO: compare query and key positions
    raise NotImplementedError("write causal_mask")


def padding_mask(lengths, t):
    # TODO: compare key positions with each sequence's length
    raise NotImplementedError("write padding_mask")


def attention_mask(lengths, t, causal=False):
    # TODO: combine the two, with a head axis
    raise NotImplementedError("write attention_mask")
