"""einsum everywhere; the content logits get d ** -0.5, the relative logits are added raw afterwards."""

import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, max_distance):
        super().__init__()
        self.h, self.max_distance = num_heads, max_distance
        self.dh = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.dh)

    def forward(self, x, mask=None):
        b, t, _ = x.shape
        q = self.W_q(x).unflatten(-1, (self.h, self.dh))  # (b, t, h, dh)
        k = self.W_k(x).unflatten(-1, (self.h, self.dh))
        v = self.W_v(x).unflatten(-1, (self.h, self.dh))
        pos = torch.arange(t, device=x.device)
        rel = self.rel_k((pos[None] - pos[:, None]).clamp(-self.max_distance, self.max_distance) + self.max_distance)
        logits = torch.einsum("bihd,bjhd->bhij", q, k) * self.dh ** -0.5
        logits = logits + torch.einsum("bihd,ijd->bhij", q, rel)
        if mask is not None:
            logits = logits.masked_fill(~mask[:, None], torch.finfo(logits.dtype).min)
        probs = logits.softmax(-1)
        ctx = torch.einsum("bhij,bjhd->bihd", probs, v).flatten(2)
        return self.W_o(ctx), probs
