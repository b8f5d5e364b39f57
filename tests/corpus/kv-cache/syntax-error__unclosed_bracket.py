"""An unclosed bracket in the mask line: the file does not parse."""

import math

import torch
from torch import nn


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rope_base=10000.0):
        super().__init__()
        self.nh, self.nkv, self.dh = num_heads, num_kv_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.dh, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.dh, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        b, n, _ = x.shape
        n_past = 0 if cache is None else cache[0].shape[2]
        keep = torch.ones(n, n_past + n, dtype=torch.bool, device=x.device).tril(diagonal=n_past
        return x, keep
