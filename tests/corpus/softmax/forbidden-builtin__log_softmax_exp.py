"""Goes through log_softmax and exponentiates: still a ready-made softmax."""

import torch


def softmax(x, dim=-1):
    m = x.amax(dim, keepdim=True)
    return torch.log_softmax(x - m, dim).exp()
