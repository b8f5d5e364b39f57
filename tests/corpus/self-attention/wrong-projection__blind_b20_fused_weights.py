"""Single-head self-attention that fuses the three projections into one F.linear call by concatenating
the layers' weights and biases, then splits the result into q (dk), k (dk) and v (dv). Mistake: the
tuple of layers lists W_q twice (W_q, W_q, W_v), so the keys are made with W_q's weights and k == q."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.dk, self.dv = dk, dv
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def forward(self, x, mask=None):
        layers = (self.W_q, self.W_q, self.W_v)  # MISTAKE
        weight = torch.cat([lin.weight for lin in layers], dim=0)
        bias = None if layers[0].bias is None else torch.cat([lin.bias for lin in layers], dim=0)
        q, k, v = F.linear(x, weight, bias).split([self.dk, self.dk, self.dv], dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights
