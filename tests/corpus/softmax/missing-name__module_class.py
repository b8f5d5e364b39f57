"""Writes a Softmax module instead of the function."""

import torch
from torch import nn


class Softmax(nn.Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        e = torch.exp(x - x.amax(self.dim, keepdim=True))
        return e / e.sum(self.dim, keepdim=True)
