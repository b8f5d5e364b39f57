"""Single-head self-attention that turns the boolean mask into an additive one with log (log 1 = 0,
log 0 = -inf) and fuses the scaled product and the mask into one torch.baddbmm call (alpha = 1/sqrt(dk)).
Correct (unusual style: additive log-mask, baddbmm)."""

import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        if mask is None:
            additive = x.new_zeros(1, 1, 1)
        else:
            additive = mask.to(x.dtype).log()
        B, T = x.shape[0], x.shape[1]
        scores = torch.baddbmm(additive.expand(B, T, T), q, k.transpose(1, 2), alpha=1.0 / math.sqrt(q.shape[-1]))
        w = torch.softmax(scores, dim=-1)
        return torch.bmm(w, v), w
