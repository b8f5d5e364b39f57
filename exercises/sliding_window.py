"""Exercise sliding-window: sliding-window attention with sinks (target: 6 minutes).

Write sliding_window_attention(q, k, v, window, sinks=None) -> (out, weights).

    q        (B, H, Tq, d)
    k, v     (B, H, Tk, d), with Tq <= Tk
    window   int >= 1
    sinks    None, or (H,) in q's dtype: one learned logit per head (gpt-oss)
    out      (B, H, Tq, d)
    weights  (B, H, Tq, Tk), the probabilities after the softmax, without the sink's column

The queries are the last Tq of the Tk positions (as with a KV cache): query i sits at p = i + Tk - Tq and
may see key j iff p - window < j <= p, that is itself and the window - 1 keys before it (the gpt-oss
convention; some Hugging Face releases let window + 1 keys through: that fails here).
A sink joins each row's softmax as one extra column (its logit as it is, not divided by sqrt(d)) and is
dropped before the weighted sum, so a row's weights sum to less than 1.
Scores are q @ k^T / sqrt(d). Keep the input's dtype and device.
Not allowed: torch.nn.functional.scaled_dot_product_attention, flex_attention.

Check it with:  attn-drill check
"""

import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    # TODO: scores, the window mask (bottom-right aligned), the sink column, softmax, drop the sink, weights @ v
    raise NotImplementedError("write sliding_window_attention")
