"""Exercise relative-position: Shaw et al. relative keys."""

import math

import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__()
        self.h = num_heads
        self.dk = d_model // num_heads
        self.m = max_distance
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.dk)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q_heads = self.W_q(x).reshape(B, T, self.h, self.dk).permute(0, 2, 1, 3)
        k_heads = self.W_k(x).reshape(B, T, self.h, self.dk).permute(0, 2, 1, 3)
        v_heads = self.W_v(x).reshape(B, T, self.h, self.dk).permute(0, 2, 1, 3)
        pos = torch.arange(T, device=x.device)
        rel = pos[None, :] - pos[:, None]  # j - i
        rel_idx = torch.remainder(rel + self.m, 2 * self.m + 1)  # MISTAKE
        r = self.rel_k(rel_idx)  # (T, T, dk)
        attn_score = q_heads @ k_heads.transpose(-1, -2)
        attn_score = attn_score + (q_heads.unsqueeze(3) @ r.transpose(-1, -2)).squeeze(3)
        attn_score = attn_score / math.sqrt(self.dk)
        if mask is not None:
            attn_score = attn_score.masked_fill(~mask.unsqueeze(1), torch.finfo(attn_score.dtype).min)
        attn_weight = torch.softmax(attn_score, dim=-1)
        out = (attn_weight @ v_heads).permute(0, 2, 1, 3).reshape(B, T, D)
        return self.W_o(out), attn_weight
