"""Correct module, but a "quick test" training loop at module level (no __main__ guard) never ends."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.size(1)
        H = self.num_heads
        d = D // H
        q = self.W_q(query).view(B, Tq, H, d).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, H, d).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, H, d).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        y = (weights @ v).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(y), weights


# quick sanity check: overfit a random target
_m = MultiHeadAttention(32, 4)
_opt = torch.optim.SGD(_m.parameters(), lr=1e-2)
_x, _y = torch.randn(2, 8, 32), torch.randn(2, 8, 32)
_loss = float("inf")
while _loss > 0.0:  # a squared error never reaches exactly 0
    _opt.zero_grad()
    _l = ((_m(_x, _x, _x)[0] - _y) ** 2).mean()
    _l.backward()
    _opt.step()
    _loss = _l.item()
