# Sends SIGSTOP to itself inside softmax: the process freezes (not dead, not looping); the time limit must still end it.
import os
import signal

import torch


def softmax(x, dim=-1):
    os.kill(os.getpid(), signal.SIGSTOP)
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)
