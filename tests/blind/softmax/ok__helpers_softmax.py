# Correct softmax built on its own folder's helpers.py (softmax/helpers.py: row_max), next to math.py and attn_drill/ shadows.
import torch

import helpers

assert helpers.WHO == "softmax/helpers.py", "got the wrong helpers module: " + helpers.WHO


def softmax(x, dim=-1):
    e = torch.exp(x - helpers.row_max(x, dim))
    return e / e.sum(dim=dim, keepdim=True)
