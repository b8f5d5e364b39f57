import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.n_head = num_heads
        self.d_k = d_model // num_heads
        self.norm = self.d_k ** (1 // 2)  # MISTAKE: 1 // 2 is 0, so this is 1, not sqrt(d_k)
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _attend(self, qh, kh, vh, mask):
        sc = qh @ kh.transpose(-1, -2) / self.norm
        if mask is not None:
            sc = sc.masked_fill(mask == 0, float("-inf"))
        w = torch.softmax(sc, dim=-1)
        return w @ vh, w

    def forward(self, query, key, value, mask=None):
        Q = self.W_q(query)
        K = self.W_k(key)
        V = self.W_v(value)
        dk = self.d_k
        outs, ws = [], []
        for i in range(self.n_head):
            sl = slice(i * dk, (i + 1) * dk)
            o, w = self._attend(Q[:, :, sl], K[:, :, sl], V[:, :, sl], mask)
            outs.append(o)
            ws.append(w)
        merged = torch.cat(outs, dim=-1)
        return self.W_o(merged), torch.stack(ws, dim=1)
