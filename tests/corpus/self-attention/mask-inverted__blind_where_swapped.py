"""Mistake: torch.where arguments swapped, so visible keys get -inf and hidden keys keep their score."""
import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, dim, dk, dv, bias=True):
        super().__init__()
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)
        self.inv_sqrt = dk ** -0.5

    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        logits = torch.einsum("btd,bsd->bts", q, k) * self.inv_sqrt
        if mask is not None:
            very_neg = torch.tensor(-1e4, dtype=logits.dtype, device=logits.device)
            logits = torch.where(mask, very_neg, logits)
        w = logits.softmax(-1)
        return torch.einsum("bts,bse->bte", w, v), w
