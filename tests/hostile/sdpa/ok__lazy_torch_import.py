"""Correct; imports public torch modules lazily inside the function, and lets torch wrap one of its own
functions the way `import torch._dynamo` does on its first import (torch/_dynamo/__init__.py wraps
torch.manual_seed in torch._disable_dynamo; `import torch.nn.attention.bias` gets there, but costs two seconds,
so tests/test_forgery.py checks that import itself). Neither is the user's tampering."""
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    import torch.nn.attention  # noqa: F401
    from torch.nn.attention import sdpa_kernel  # noqa: F401

    if not hasattr(torch.manual_seed, "__wrapped__"):
        torch.manual_seed = torch._disable_dynamo(torch.manual_seed)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return w @ v, w
