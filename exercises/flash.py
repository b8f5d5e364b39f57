"""Exercise flash: flash attention, tiled with an online softmax (target: 10 minutes).

Write flash_attention(q, k, v, causal=False, block_size=64) -> out.

    q           (B, H, Tq, d)
    k, v        (B, H, Tk, d)
    causal      if True, query i may see key j only when j <= i + (Tk - Tq): the mask is aligned
                bottom-right, so with a KV cache (Tq < Tk) the newest query sees every key.
    block_size  how many keys to process at a time
    out         (B, H, Tq, d) = softmax(q @ k^T / sqrt(d) [causal mask]) @ v

Go through the keys block by block. Keep, for every query row, a running max of its scores, a running
sum of exponentials and an unnormalised output; when a block raises the max, rescale what you summed so
far. The full (Tq, Tk) score matrix must never exist: the checker watches every tensor your code makes
and fails one that holds Tq * Tk entries or more per (batch, head). Keep the input's dtype and device.
A query that sees no key at all (causal with Tq > Tk) is never graded (zeros or NaN are both accepted).
Not allowed: torch.nn.functional.scaled_dot_product_attention.

Check it with:  attn-drill check
"""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    # TODO: running max, running sum and output per query row; loop over key blocks; rescale; normalise
    raise NotImplementedError("write flash_attention")
