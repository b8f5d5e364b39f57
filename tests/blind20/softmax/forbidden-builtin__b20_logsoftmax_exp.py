"""Softmax written as exp(log_softmax(x)): numerically stable and numerically right, but it calls
torch.nn.functional.log_softmax, one of the ready-made softmaxes the exercise forbids.
Mistake: a forbidden built-in does the work."""

import torch
import torch.nn.functional as F


def softmax(x, dim=-1):
    logp = F.log_softmax(x, dim=dim)  # MISTAKE
    return logp.exp()
