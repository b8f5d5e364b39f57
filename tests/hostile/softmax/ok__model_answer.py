"""A numerically stable softmax: a model answer.

softmax(x)_i = exp(x_i) / sum_j exp(x_j), computed as exp(x_i - m) / sum_j exp(x_j - m) with m the max
of the slice: the same value (the factor exp(-m) cancels), but every exponent is <= 0, so nothing overflows.
"""

import torch


def softmax(x, dim=-1):
    """x any shape; normalises along dim. Returns a tensor shaped and typed like x."""
    # why the max of each slice (not of the whole tensor): a slice far below a global max would underflow to 0/0
    m = x.amax(dim=dim, keepdim=True)  # x's shape with dim reduced to 1
    e = torch.exp(x - m)  # like x; every entry in (0, 1], a -inf entry gives exactly 0
    return e / e.sum(dim=dim, keepdim=True)  # like x; each slice along dim sums to 1
