"""Exercise mha: multi-head attention (one head at a time, as on a whiteboard)."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.h = num_heads
        self.d_k = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        Q, K, V = self.W_q(query), self.W_k(key), self.W_v(value)
        head_outs, head_probs = [], []
        for h in range(self.h):
            cols = slice(h * self.d_k, (h + 1) * self.d_k)
            q_h, k_h, v_h = Q[..., cols], K[..., cols], V[..., cols]  # (B, T, d_k)
            s = torch.bmm(q_h, k_h.transpose(1, 2)) / math.sqrt(self.d_k)  # (B, Tq, Tk)
            if mask is not None:
                s = s.masked_fill(mask.logical_not(), torch.finfo(s.dtype).min)
            p = torch.softmax(s, dim=-1)
            head_outs.append(torch.bmm(p, v_h))
            head_probs.append(p)
        out = self.W_o(torch.cat(head_outs, dim=-1))
        return out, torch.stack(head_probs, dim=1)
