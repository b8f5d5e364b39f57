# helper module for softmax/ok__helpers_softmax.py (not checked itself): softmax-only helpers
import torch

WHO = "softmax/helpers.py"


def row_max(x, dim):
    """The max of every slice along dim, kept as a size-1 axis."""
    return torch.amax(x, dim=dim, keepdim=True)
