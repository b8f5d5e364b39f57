import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    """No repeat at all: the query heads are viewed as (kv_head, member) and einsum reads the shared kv head."""

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.nh, self.nkv = num_heads, num_kv_heads
        self.hs = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hs, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hs, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        b, t, c = x.shape
        g = self.nh // self.nkv
        # query head n = kv * g + member, so (nh, hs) -> (nkv, g, hs) keeps consecutive heads together
        q = self.W_q(x).view(b, t, self.nkv, g, self.hs)
        k = self.W_k(x).view(b, t, self.nkv, self.hs)
        v = self.W_v(x).view(b, t, self.nkv, self.hs)

        logits = torch.einsum("bikgs,bjks->bkgij", q, k) * (1.0 / math.sqrt(self.hs))
        if mask is not None:
            allowed = mask[:, None, None]  # (b, 1, 1, t or 1, t)
            logits = logits.masked_fill(allowed.logical_not(), float("-inf"))
        probs = torch.softmax(logits, dim=-1)
        if mask is not None:
            probs = torch.nan_to_num(probs, nan=0.0)  # rows with nothing visible
        y = torch.einsum("bkgij,bjks->bikgs", probs, v).reshape(b, t, c)
        return self.W_o(y), probs.reshape(b, self.nh, t, t)
