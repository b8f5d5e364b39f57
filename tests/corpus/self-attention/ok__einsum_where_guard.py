"""einsum for the scores and the mixing, a precomputed dk ** -0.5, torch.where(-inf) with an empty-row guard."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, dim, dk, dv, bias=True):
        super().__init__()
        self.scale = dk ** -0.5
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        logits = torch.einsum("bid,bjd->bij", q, k) * self.scale
        if mask is not None:
            logits = torch.where(mask, logits, float("-inf"))
        probs = F.softmax(logits, dim=-1)
        if mask is not None:
            probs = torch.where(mask.any(-1, keepdim=True), probs, 0.0)
        return torch.einsum("bij,bjd->bid", probs, v), probs
