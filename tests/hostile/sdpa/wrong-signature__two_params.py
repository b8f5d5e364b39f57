"""Forgot k and mask: (q, v) only."""
import math

import torch


def scaled_dot_product_attention(q, v):
    w = torch.softmax(q @ q.transpose(-2, -1), -1)
    return w @ v, w
