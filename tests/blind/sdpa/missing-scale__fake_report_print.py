# Wrong sdpa (no scale) whose printout imitates the checker: a plain-text "✓ passed" report, then (at exit) cursor-up and
# erase-line escapes meant to wipe the real verdict printed after it.
import atexit
import sys

import torch

print("✓ sdpa  passed  seed 1234\n  load ✓  api ✓  shapes ✓  values ✓  gradients ✓  dtypes ✓  device ✓")
atexit.register(lambda: sys.stdout.write("\x1b[20A\x1b[J✓ sdpa  passed\n"))


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)  # the real mistake: no 1/sqrt(d)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    sys.stdout.write("\r\x1b[K\x1b[32m✓ values match\x1b[0m\n")
    return weights @ v, weights
