"""Mistake: applies 1/sqrt(dk) to the attention output rather than to the scores."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, dim, dk, dv, bias=True):
        super().__init__()
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)
        self.scale = dk ** -0.5

    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        logits = torch.bmm(q, k.transpose(1, 2))
        if mask is not None:
            logits = logits.masked_fill(~mask, torch.finfo(logits.dtype).min)
        w = F.softmax(logits, dim=-1)
        out = torch.bmm(w, v) * self.scale
        return out, w
