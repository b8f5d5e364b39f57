"""Sliding-window attention with attention sinks: a model answer.

Mistral's local attention and gpt-oss's sinks. Each query sees itself and the window - 1 keys before it, so the
cost per query is O(window), not O(T). A learned "sink" logit per head joins every row's softmax as one more
column and is then dropped: a head can put weight on "nothing", and its row sums to less than 1.
"""

import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    """q (B, H, Tq, d), k and v (B, H, Tk, d) with Tq <= Tk; window >= 1; sinks None or (H,), one logit per head.

    Returns out (B, H, Tq, d) and weights (B, H, Tq, Tk): the probabilities without the sink's column.
    """
    B, H, Tq, d = q.shape
    Tk = k.size(-2)
    # why 1/sqrt(d): q.k sums d products; this keeps the softmax out of saturation
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, H, Tq, Tk)
    # the queries are the last Tq of the Tk positions (as with a KV cache): query i sits at p = i + Tk - Tq
    p = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)  # (Tq, 1)
    j = torch.arange(Tk, device=q.device)[None, :]  # (1, Tk)
    visible = (j <= p) & (j > p - window)  # (Tq, Tk): itself and the window - 1 keys before it
    scores = scores.masked_fill(~visible, float("-inf"))  # a hidden key gets exactly zero probability
    if sinks is not None:
        # the sink is a learned logit, not a dot product: it joins the softmax as it is, unscaled
        sink = sinks.reshape(1, H, 1, 1).expand(B, H, Tq, 1)  # (B, H, Tq, 1)
        scores = torch.cat([scores, sink], dim=-1)  # (B, H, Tq, Tk + 1)
    weights = torch.softmax(scores, dim=-1)  # each row sums to 1, the sink's column included
    weights = weights[..., :Tk]  # drop the sink's column: what it took, no key gets
    out = weights @ v  # (B, H, Tq, d)
    return out, weights
