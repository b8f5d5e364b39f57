import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.heads = num_heads
        self.dh = d_model // num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        qkv = self.W_qkv(x).unflatten(-1, (self.heads, 3, self.dh))  # MISTAKE: per-head [q k v] layout, the weight is [q | k | v]
        q, k, v = (t.transpose(1, 2) for t in qkv.unbind(dim=3))  # 3 x (B, H, T, dh)
        att = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(self.dh)
        if mask is not None:
            att = att.masked_fill(~mask[:, None], float("-inf"))
        att = att.softmax(dim=-1)
        y = torch.einsum("bhij,bhjd->bihd", att, v).reshape(B, T, D)
        return self.W_o(y), att
