"""Right numbers, but the outputs go to the meta device (shapes, no numbers) whatever the inputs' device."""
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return (w @ v).to("meta"), w.to("meta")
