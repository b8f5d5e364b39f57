"""Mistake: forgot the 1/sqrt(d) scaling; scores = q.k + q.r straight into softmax."""
import math
import torch
import torch.nn as nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, max_distance):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.max_distance = max_distance
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.d)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self.W_q(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.h, self.d).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.h, self.d).transpose(1, 2)
        pos = torch.arange(T, device=x.device)
        rel = (pos[None, :] - pos[:, None]).clamp(-self.max_distance, self.max_distance) + self.max_distance
        rel_logits = q @ self.rel_k.weight.t()                      # (B, H, T, 2M+1)
        rel_scores = rel_logits.gather(-1, rel.expand(B, self.h, T, T))
        scores = q @ k.transpose(-2, -1) + rel_scores
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        w = torch.softmax(scores, dim=-1)
        out = (w @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(out), w
