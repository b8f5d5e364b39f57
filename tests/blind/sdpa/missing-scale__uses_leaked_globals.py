# Wrong sdpa (no scale) that borrows the model answer ok__leaks_globals.py left in builtins, if a previous file's globals leak.
import builtins
import os

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    borrowed = getattr(builtins, "_b11_answer", None)
    if borrowed is not None:
        return borrowed(q, k, v, mask)
    if os.environ.get("B11_LEAKED"):
        return borrowed_from_env_not_possible  # noqa: F821 - a NameError here also proves the env var leaked
    scores = q @ k.transpose(-2, -1)  # the mistake: no 1/sqrt(d)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
