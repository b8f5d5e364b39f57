"""Per-head loop: each head's W_o column block with the whole bias, summed over heads."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__()
        self.num_heads, self.max_distance = num_heads, max_distance
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.d_head)

    def forward(self, x, mask=None):
        T = x.size(1)
        d, m = self.d_head, self.max_distance
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        j_minus_i = torch.arange(T, device=x.device).unsqueeze(0) - torch.arange(T, device=x.device).unsqueeze(1)
        r = self.rel_k(torch.clamp(j_minus_i, min=-m, max=m) + m)  # (T, T, d)
        outs, weights = [], []
        for h in range(self.num_heads):
            qh, kh, vh = (t[..., h * d:(h + 1) * d] for t in (q, k, v))  # (B, T, d)
            s = qh @ kh.transpose(-2, -1) + (qh.unsqueeze(2) * r).sum(-1)  # (B, T, T)
            s = s / math.sqrt(d)
            if mask is not None:
                s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
            w = torch.softmax(s, dim=-1)
            outs.append(w @ vh)
            weights.append(w)
        y = sum(F.linear(o, self.W_o.weight[:, h * d:(h + 1) * d], self.W_o.bias) for h, o in enumerate(outs))
        return y, torch.stack(weights, dim=1)
