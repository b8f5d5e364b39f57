"""Sends itself SIGSEGV from forward (a leftover 'dump core here' debugging line)."""

import math

import os
import signal

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim, dk, dv, bias=True):
        super().__init__()
        self.dk = dk
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def forward(self, x, mask=None):
        q = self.W_q(x)
        os.kill(os.getpid(), signal.SIGSEGV)  # debugging: a core dump with q in memory
        k = self.W_k(x)
        v = self.W_v(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        out = weights @ v
        return out, weights
