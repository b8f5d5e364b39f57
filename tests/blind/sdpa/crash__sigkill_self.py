# Sends SIGKILL to its own process from inside the function (the checker must name a crash by SIGKILL, on this line).
import os
import signal

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    os.kill(os.getpid(), signal.SIGKILL)
    return scores, scores
