"""Correct, but starts a child process that sleeps for a minute (where the sandbox refuses new processes, the
start fails quietly)."""
import subprocess
import sys

import math

import torch

try:
    _child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
except OSError as e:
    print(f"could not start a child: {e}")

def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
