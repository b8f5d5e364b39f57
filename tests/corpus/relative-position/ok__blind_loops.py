"""Correct: explicit loops over i and j building the position term one pair at a time."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, max_distance):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.k_max = max_distance
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.head_dim)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H, d = self.num_heads, self.head_dim
        q = self.W_q(x).reshape(B, T, H, d).permute(0, 2, 1, 3)
        k = self.W_k(x).reshape(B, T, H, d).permute(0, 2, 1, 3)
        v = self.W_v(x).reshape(B, T, H, d).permute(0, 2, 1, 3)
        content = q @ k.transpose(-1, -2)
        rows = []
        for i in range(T):
            cols = []
            for j in range(T):
                offset = max(-self.k_max, min(self.k_max, j - i))
                r = self.rel_k.weight[offset + self.k_max]          # (d,)
                cols.append(q[:, :, i, :] @ r)                       # (B, H)
            rows.append(torch.stack(cols, dim=-1))
        position = torch.stack(rows, dim=-2)                         # (B, H, T, T)
        scores = (content + position) / d ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None], torch.finfo(scores.dtype).min)
        attn = F.softmax(scores, dim=-1)
        y = (attn @ v).permute(0, 2, 1, 3).reshape(B, T, D)
        return self.W_o(y), attn
