import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        bsz, seqlen, _ = x.shape
        xq = self.W_q(x).view(bsz, seqlen, self.num_heads, self.head_dim)
        xk = self.W_k(x).view(bsz, seqlen, self.num_kv_heads, self.head_dim)
        xv = self.W_v(x).view(bsz, seqlen, self.num_kv_heads, self.head_dim)

        n_rep = self.num_heads // self.num_kv_heads
        xk = torch.repeat_interleave(xk, n_rep, dim=2)
        xv = torch.repeat_interleave(xv, n_rep, dim=2)

        xq, xk, xv = xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2)
        norm = self.head_dim ** (1 // 2)  # MISTAKE: 1 // 2 is 0, so this is 1, not sqrt(head_dim)
        scores = torch.matmul(xq, xk.transpose(2, 3)) / norm
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        out = torch.matmul(probs, xv)
        out = out.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.W_o(out), probs
