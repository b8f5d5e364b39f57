"""Correct module, but a 'quick test' training loop at module level (no __main__ guard) never ends."""

import math

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
        k = self.W_k(x)
        v = self.W_v(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        out = weights @ v
        return out, weights


# quick sanity check: train until the loss is exactly zero
_m = SelfAttention(16, 8, 4)
_x, _y = torch.randn(2, 6, 16), torch.randn(2, 6, 4)
_out = lambda: _m(_x)[0]
_opt = torch.optim.SGD(_m.parameters(), lr=0.1)
_loss = float("inf")
while _loss > 0.0:
    _opt.zero_grad()
    _l = ((_out() - _y) ** 2).mean()
    _l.backward()
    _opt.step()
    _loss = _l.item()
