"""Leftover debugging: exits the process once the first result is computed."""

import os

import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim, keepdim=True))
    p = e / e.sum(dim, keepdim=True)
    os._exit(0)
    return p
