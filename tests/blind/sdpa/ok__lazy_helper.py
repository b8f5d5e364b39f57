# Correct sdpa that imports its sibling helpers.py only when first called (the folder must still be importable then).
import importlib

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    helpers = importlib.import_module("helpers")
    scores = helpers.hide(helpers.scaled_scores(q, k), mask)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.logical_not().all(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
