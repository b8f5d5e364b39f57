"""LLaMA's layer names (q_proj, k_proj, v_proj, o_proj) instead of the task's W_q, W_k, W_v, W_o."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__()
        self.n_heads, self.n_kv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.o_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        b, t, _ = x.shape
        g = self.n_heads // self.n_kv
        q = self.q_proj(x).view(b, t, self.n_heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.n_kv, self.hd).transpose(1, 2).repeat_interleave(g, dim=1)
        v = self.v_proj(x).view(b, t, self.n_kv, self.hd).transpose(1, 2).repeat_interleave(g, dim=1)
        s = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        if mask is not None:
            s = s.masked_fill(~mask[:, None], torch.finfo(s.dtype).min)
        p = F.softmax(s, dim=-1)
        return self.o_proj(torch.matmul(p, v).transpose(1, 2).reshape(b, t, -1)), p
