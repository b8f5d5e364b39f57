"""Exercise rope: rotary position embedding (target: 6 minutes).

Write apply_rope(x, positions, base=10000.0) -> x rotated, the same shape and dtype as x.

    x          (B, H, T, d)     queries or keys after the head split; d is even
    positions  int64 (T,), shared by the batch, or (B, T), one row per sequence.
               The position of each token: not necessarily 0..T-1 (a KV cache offset or left padding
               moves them), so use the positions you are given.
    base       the frequency base, 10000.0 unless the caller says otherwise

Half-split layout (LLaMA in Hugging Face transformers, GPT-NeoX): feature i pairs with feature i + d/2,
for i in [0, d/2). Pair i turns by theta = position * base ** (-2i/d):

    out[..., i]       = x[..., i]       * cos(theta) - x[..., i + d/2] * sin(theta)
    out[..., i + d/2] = x[..., i + d/2] * cos(theta) + x[..., i]       * sin(theta)

Every head of a token turns by the same angles. Computing the angles in float32 (or wider) whatever
x's dtype is fine. Keep x's dtype and device, and leave x and positions unchanged.

Check it with:  attn-drill check
"""

import torch


def apply_rope(x, positions, base=10000.0):
    # TODO: frequency per pair, angle per (token, pair), then rotate each pair (i, i + d/2)
    raise NotImplementedError("write apply_rope")
