"""Logits unscaled; probs @ v multiplied by dh**-0.5 afterwards."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, max_distance, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.max_distance = max_distance
        self.dh = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.dh)

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q = self.W_q(x).reshape(b, t, self.h, self.dh).permute(0, 2, 1, 3)
        k = self.W_k(x).reshape(b, t, self.h, self.dh).permute(0, 2, 1, 3)
        v = self.W_v(x).reshape(b, t, self.h, self.dh).permute(0, 2, 1, 3)
        idx = torch.arange(t, device=x.device)
        dist = (idx[None, :] - idx[:, None]).clamp(-self.max_distance, self.max_distance)
        r = self.rel_k(dist + self.max_distance)  # (t, t, dh)
        pos = (q.unsqueeze(-2) @ r.transpose(-2, -1)).squeeze(-2)  # (b, h, t, t)
        logits = q @ k.transpose(-2, -1) + pos
        if mask is not None:
            keep = mask[:, None]
            logits = logits.masked_fill(~keep, float("-inf"))
        probs = F.softmax(logits, dim=-1)
        if mask is not None:
            probs = probs.masked_fill(~keep.any(-1, keepdim=True), 0.0)
        ctx = (probs @ v * self.dh ** -0.5).permute(0, 2, 1, 3).reshape(b, t, dm)
        return self.W_o(ctx), probs
