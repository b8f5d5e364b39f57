import math

import torch
import torch.nn as nn


def clipped_offsets(n, k, device):
    """[i, j] -> index into the table for key j seen from query i."""
    idx = torch.arange(n, device=device)
    off = idx.unsqueeze(0) - idx.unsqueeze(1)          # j - i
    off = torch.where(off > k, torch.full_like(off, k), off)
    off = torch.where(off < -k, torch.full_like(off, -k), off)
    return off + k


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__()
        self.h = num_heads
        self.dk = d_model // num_heads
        self.k = max_distance
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.dk)

    def forward(self, x, mask=None):
        n_batch, n, _ = x.shape
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        a_k = self.rel_k(clipped_offsets(n, self.k, x.device))   # (n, n, dk)
        a_k_t = a_k.transpose(1, 2)                               # (n, dk, n)

        outs, probs = [], []
        for head in range(self.h):
            sl = slice(head * self.dk, (head + 1) * self.dk)
            q_h, k_h, v_h = Q[..., sl], K[..., sl], V[..., sl]    # (B, n, dk)
            e = q_h @ k_h.transpose(1, 2)                          # (B, n, n)
            # q_i . a_ij for every i, j: batch the (1, dk) x (dk, n) products over i
            e = e + (q_h.unsqueeze(2) @ a_k_t).squeeze(2)
            e = e / math.sqrt(self.dk)
            if mask is not None:
                e = e.masked_fill(~mask, float("-inf"))
            alpha = torch.softmax(e, dim=-1)
            if mask is not None:
                alpha = torch.nan_to_num(alpha, nan=0.0)
            probs.append(alpha)
            outs.append(alpha @ v_h)

        z = torch.cat(outs, dim=-1)                                # heads back in order
        return self.W_o(z), torch.stack(probs, dim=1)
