"""Correct; logs, formats a traceback and makes a namedtuple and a dataclass inside the function: library code
that looks at frames for its own purposes, which the checker allows."""
import collections
import dataclasses
import logging
import math
import traceback

import torch

log = logging.getLogger("mine")


def scaled_dot_product_attention(q, k, v, mask=None):
    log.warning("called with q %s", tuple(q.shape))
    try:
        raise ValueError("only to format it")
    except ValueError:
        text = traceback.format_exc()
    assert "only to format it" in text and traceback.format_stack()
    Shapes = collections.namedtuple("Shapes", "q k")

    @dataclasses.dataclass
    class Sizes:
        d: int

    scale = 1 / math.sqrt(Sizes(Shapes(q.size(-1), k.size(-1)).q).d)
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return w @ v, w
