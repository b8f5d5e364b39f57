"""RoPE turns each pair by -theta (sin sign flipped), and the merged heads are returned without applying W_o."""

import math

import torch
from torch import nn


def rope(x, pos, base):
    d = x.size(-1)
    dt = torch.promote_types(x.dtype, torch.float32)
    i = torch.arange(d // 2, device=x.device, dtype=dt)
    theta = pos.to(dt).unsqueeze(-1) * torch.pow(torch.tensor(base, dtype=dt, device=x.device), -2 * i / d)
    cos = torch.cos(theta).to(x.dtype)
    sin = torch.sin(theta).to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos + x2 * sin, x2 * cos - x1 * sin), dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, G, hd = self.num_heads, self.num_kv_heads, self.head_dim
        past_len = cache[0].size(2) if cache is not None else 0
        positions = torch.arange(past_len, past_len + T, device=x.device)

        q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
        k = self.W_k(x).view(B, T, G, hd).transpose(1, 2)
        v = self.W_v(x).view(B, T, G, hd).transpose(1, 2)
        q = rope(q, positions, self.rope_base)
        k = rope(k, positions, self.rope_base)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        L = k.size(2)

        # group query heads: (B, G, H//G, T, hd) against (B, G, 1, L, hd)
        qg = q.view(B, G, H // G, T, hd)
        scores = torch.einsum("bgrtd,bgsd->bgrts", qg, k) / math.sqrt(hd)
        allowed = torch.arange(L, device=x.device)[None, :] <= (torch.arange(T, device=x.device)[:, None] + past_len)
        scores = scores.masked_fill(~allowed, float("-inf"))
        w = torch.softmax(scores, dim=-1)
        out = torch.einsum("bgrts,bgsd->bgrtd", w, v).reshape(B, H, T, hd)
        out = out.transpose(1, 2).reshape(B, T, D)
        return out, (k, v)
