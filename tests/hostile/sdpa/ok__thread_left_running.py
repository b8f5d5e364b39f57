"""Correct, but starts a non-daemon thread that never ends."""
import threading
import time

import math

import torch


def _forever():
    while True:
        time.sleep(0.05)


threading.Thread(target=_forever).start()

def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
