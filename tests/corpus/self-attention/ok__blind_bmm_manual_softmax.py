"""Correct: bmm, additive mask bias, hand-written stable softmax."""
import math
import torch
import torch.nn as nn


def _softmax(z):
    z = z - z.amax(dim=-1, keepdim=True)
    e = torch.exp(z)
    return e / e.sum(dim=-1, keepdim=True)


class SelfAttention(nn.Module):
    def __init__(self, dim, dk, dv, bias=True, dropout=0.0):
        super().__init__()
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)
        self.scale = 1.0 / math.sqrt(dk)

    def forward(self, x, mask=None):
        query, key, value = self.W_q(x), self.W_k(x), self.W_v(x)
        sim = torch.bmm(query, key.transpose(1, 2)) * self.scale
        if mask is not None:
            bias = torch.zeros(mask.shape, dtype=sim.dtype, device=sim.device)
            bias = bias.masked_fill(mask.logical_not(), torch.finfo(sim.dtype).min)
            sim = sim + bias
        p = _softmax(sim)
        return torch.bmm(p, value), p
