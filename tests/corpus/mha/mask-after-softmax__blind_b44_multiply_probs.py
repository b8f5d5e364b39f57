import math

import torch
from torch import nn
from torch.nn import functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.depth = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _heads(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.depth).permute(0, 2, 1, 3)

    def forward(self, query, key, value, mask=None):
        q = self._heads(self.W_q(query))
        k = self._heads(self.W_k(key))
        v = self._heads(self.W_v(value))
        logits = q @ k.transpose(-2, -1) / math.sqrt(self.depth)
        if mask is None:
            weights = F.softmax(logits, dim=-1)
        else:
            keep = mask.unsqueeze(1)
            weights = F.softmax(logits, dim=-1) * keep  # MISTAKE
        ctx = (weights @ v).permute(0, 2, 1, 3).flatten(2)
        return self.W_o(ctx), weights
