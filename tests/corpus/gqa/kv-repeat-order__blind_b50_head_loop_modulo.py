import math

import torch
from torch import nn


def one_head(q, k, v, mask, scale):
    # q, k, v: (B, T, d); mask None or (B, T, T) / (B, 1, T)
    att = torch.bmm(q, k.transpose(1, 2)) * scale
    if mask is not None:
        att = att.masked_fill(~mask, float("-inf"))
    att = att.softmax(dim=-1)
    return torch.bmm(att, v), att


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.h = num_heads
        self.hkv = num_kv_heads
        self.hd = d_model // num_heads
        self.scale = 1.0 / math.sqrt(self.hd)
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        hd = self.hd
        heads, maps = [], []
        for h in range(self.h):
            g = h % self.hkv  # MISTAKE: tiles the kv heads; consecutive query heads should share one
            o, a = one_head(
                Q[..., h * hd:(h + 1) * hd],
                K[..., g * hd:(g + 1) * hd],
                V[..., g * hd:(g + 1) * hd],
                mask,
                self.scale,
            )
            heads.append(o)
            maps.append(a)
        return self.W_o(torch.cat(heads, dim=-1)), torch.stack(maps, dim=1)
