"""Exercise mha: multi-head attention."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.d_model = d_model
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, t):
        b, n, _ = t.shape
        return t.reshape(b, n, self.num_heads, -1).transpose(1, 2)

    def forward(self, query, key, value, mask=None):
        b, n, _ = query.shape
        q_heads = self.split_heads(self.W_q(query))
        k_heads = self.split_heads(self.W_k(key))
        v_heads = self.split_heads(self.W_v(key))  # MISTAKE
        head_dim = q_heads.size(-1)
        attn_score = torch.matmul(q_heads, k_heads.transpose(2, 3)) / math.sqrt(head_dim)
        if mask is not None:
            attn_score = attn_score.masked_fill(~mask[:, None], torch.finfo(attn_score.dtype).min)
        attn_prob = torch.softmax(attn_score, dim=-1)
        ctx = torch.matmul(attn_prob, v_heads).transpose(1, 2).reshape(b, n, self.d_model)
        return self.W_o(ctx), attn_prob
