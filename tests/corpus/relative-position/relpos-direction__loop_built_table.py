"""Builds r with Python loops over (i, j), reading rel_k.weight at clip(i - j): the offset runs backwards."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, max_distance):
        super().__init__()
        self.n_heads = num_heads
        self.k = max_distance
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, d_model // num_heads)

    def forward(self, x, mask=None):
        bsz, seq, dm = x.shape
        hd = dm // self.n_heads
        q = self.W_q(x).view(bsz, seq, self.n_heads, hd).permute(0, 2, 1, 3)
        k = self.W_k(x).view(bsz, seq, self.n_heads, hd).permute(0, 2, 1, 3)
        v = self.W_v(x).view(bsz, seq, self.n_heads, hd).permute(0, 2, 1, 3)
        rows = []
        for i in range(seq):
            rows.append(torch.stack([self.rel_k.weight[max(-self.k, min(self.k, i - j)) + self.k]
                                     for j in range(seq)]))
        r = torch.stack(rows)  # (seq, seq, hd)
        att = q @ k.transpose(-2, -1) + torch.einsum("bhqd,qkd->bhqk", q, r)
        att = att / math.sqrt(hd)
        if mask is not None:
            att = att.masked_fill(mask.unsqueeze(1) == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        if mask is not None:
            att = att.nan_to_num(0.0)
        out = (att @ v).permute(0, 2, 1, 3).reshape(bsz, seq, dm)
        return self.W_o(out), att
