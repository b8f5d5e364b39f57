"""Exercise mha: multi-head attention."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.n_head = num_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        bsz, q_len, _ = query.size()
        kv_len = key.size(1)
        q_heads = self.W_q(query).view(bsz, q_len, self.n_head, self.head_dim).permute(0, 2, 1, 3)
        k_heads = self.W_k(key).view(bsz, kv_len, self.n_head, self.head_dim).permute(0, 2, 1, 3)
        v_heads = self.W_v(value).view(bsz, kv_len, self.n_head, self.head_dim).permute(0, 2, 1, 3)

        attn_score = q_heads @ k_heads.transpose(-1, -2) / math.sqrt(self.head_dim)
        if mask is not None:
            if mask.size(1) == 1:
                mask = mask.unsqueeze(1)  # (B, 1, 1, Tk): 广播到所有头
            attn_score = attn_score.masked_fill(mask == 0, torch.finfo(attn_score.dtype).min)  # MISTAKE
        attn_weight = torch.softmax(attn_score, dim=-1)
        out = (attn_weight @ v_heads).permute(0, 2, 1, 3).reshape(bsz, q_len, -1)
        return self.W_o(out), attn_weight
