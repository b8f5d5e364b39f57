"""Correct: loops over heads slicing each projection's feature block, cats the heads back in order."""
import math
import torch
import torch.nn as nn


class MultiHeadAttentionDims(nn.Module):
    def __init__(self, dim, num_heads, dk, dv, bias=True):
        super().__init__()
        self.H = num_heads
        self.dk = dk
        self.dv = dv
        self.W_q = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_k = nn.Linear(dim, num_heads * dk, bias=bias)
        self.W_v = nn.Linear(dim, num_heads * dv, bias=bias)
        self.W_o = nn.Linear(num_heads * dv, dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        Q, K, V = self.W_q(query), self.W_k(key), self.W_v(value)
        heads, probs = [], []
        for h in range(self.H):
            qh = Q[..., h * self.dk:(h + 1) * self.dk]
            kh = K[..., h * self.dk:(h + 1) * self.dk]
            vh = V[..., h * self.dv:(h + 1) * self.dv]
            s = torch.bmm(qh, kh.transpose(1, 2)) / math.sqrt(self.dk)
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            p = torch.softmax(s, dim=-1)
            heads.append(torch.bmm(p, vh))
            probs.append(p)
        out = self.W_o(torch.cat(heads, dim=-1))
        return out, torch.stack(probs, dim=1)
