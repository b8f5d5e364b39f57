# helper module for sdpa/ok__pkg_folder.py (not checked itself): a masked, zero-safe softmax over the keys
import torch


def probs(scores, mask=None):
    w = torch.softmax(scores, dim=-1)
    if mask is not None:
        # a query that sees no key: zeros instead of NaN
        w = w.masked_fill(mask.logical_not().all(dim=-1, keepdim=True), 0.0)
    return w
