import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.n_heads = num_heads
        self.hd = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        Q, K, V = self.W_q(query), self.W_k(key), self.W_v(value)
        head_outs, head_probs = [], []
        for h in range(self.n_heads):
            cols = slice(h * self.hd, (h + 1) * self.hd)
            qh, kh, vh = Q[..., cols], K[..., cols], V[..., cols]  # (B, T, hd) each
            s = qh @ kh.transpose(1, 2) / math.sqrt(self.hd)  # (B, Tq, Tk)
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))  # one head at a time: the mask fits as it is
            p = torch.softmax(s, dim=-1)
            head_probs.append(p)
            head_outs.append(p @ vh)  # (B, Tq, hd)
        merged = torch.stack(head_outs, dim=-1).flatten(start_dim=2)  # MISTAKE: (B, Tq, hd, H) flattened, features interleaved across heads
        return self.W_o(merged), torch.stack(head_probs, dim=1)
