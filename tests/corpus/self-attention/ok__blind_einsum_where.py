"""Correct: einsum scores, torch.where with finfo.min, scale folded into q."""
import torch
from torch import nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, dim: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        Q = Q * Q.shape[-1] ** -0.5
        logits = torch.einsum("bid,bjd->bij", Q, K)
        if mask is not None:
            neg = torch.finfo(logits.dtype).min
            logits = torch.where(mask, logits, torch.full_like(logits, neg))
        attn = F.softmax(logits, dim=-1)
        out = torch.einsum("bij,bje->bie", attn, V)
        return out, attn
