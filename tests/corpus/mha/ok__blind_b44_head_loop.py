import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.h = num_heads
        self.dh = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        Q = self.W_q(query)
        K = self.W_k(key)
        V = self.W_v(value)
        outs, probs = [], []
        for i in range(self.h):
            sl = slice(i * self.dh, (i + 1) * self.dh)
            qi, ki, vi = Q[..., sl], K[..., sl], V[..., sl]
            s = torch.bmm(qi, ki.transpose(1, 2)) / math.sqrt(self.dh)
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            p = F.softmax(s, dim=-1)
            outs.append(torch.bmm(p, vi))
            probs.append(p)
        concat = torch.cat(outs, dim=-1)
        return self.W_o(concat), torch.stack(probs, dim=1)
