"""Mistake: masks by multiplying the scores with the 0/1 mask (masked scores become 0, not -inf)."""
import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, dim, dk, dv, bias=True):
        super().__init__()
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        s = torch.einsum("bid,bjd->bij", q, k) / q.shape[-1] ** 0.5
        if mask is not None:
            s = s * mask.to(s.dtype)
        s = s - s.amax(-1, keepdim=True)
        e = s.exp()
        w = e / e.sum(-1, keepdim=True)
        return torch.einsum("bij,bjc->bic", w, v), w
