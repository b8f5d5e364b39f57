# Correct mha built on its own folder's helpers.py (mha/helpers.py: split_heads/merge_heads), next to sdpa's different helpers.py.
import math

import torch
from torch import nn

import helpers

assert helpers.WHO == "mha/helpers.py", "got the wrong helpers module: " + helpers.WHO


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        q = helpers.split_heads(self.W_q(query), self.h)
        k = helpers.split_heads(self.W_k(key), self.h)
        v = helpers.split_heads(self.W_v(value), self.h)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if mask is not None:
            mask = mask.unsqueeze(1)
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
        return self.W_o(helpers.merge_heads(weights @ v)), weights
