# Reads an unmapped address through ctypes inside the function: SIGSEGV.
import ctypes

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    ctypes.string_at(0xDEAD00000000, 16)  # an unmapped address (on some kernels page 0 reads back)
    return scores, scores
