import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.n_q = num_heads
        self.n_kv = num_kv_heads
        self.hd = d_model // num_heads
        self.W_q = nn.Linear(d_model, num_heads * self.hd, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=bias)
        self.W_o = nn.Linear(num_heads * self.hd, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, _ = x.shape
        G = self.n_q // self.n_kv
        # queries grouped by the kv head they read: (B, T, Hkv, G, hd)
        q = self.W_q(x).view(B, T, self.n_kv, G, self.hd)
        k = self.W_k(x).view(B, T, self.n_kv, self.hd)
        v = self.W_v(x).view(B, T, self.n_kv, self.hd)
        s = torch.einsum("bqngd,bknd->bngqk", q, k) / math.sqrt(self.hd)
        if mask is not None:
            m = mask[:, None, None, :, :]
            s = s.masked_fill(m.logical_not(), float("-inf"))
        p = F.softmax(s, dim=-1)
        o = torch.einsum("bngqk,bknd->bqngd", p, v).reshape(B, T, -1)
        return self.W_o(o), p.reshape(B, self.n_q, T, T)
