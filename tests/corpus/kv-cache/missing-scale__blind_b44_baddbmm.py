import math

import torch
from torch import nn


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d_head = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def _rope(self, x, positions):
        half = self.d_head // 2
        calc = torch.promote_types(x.dtype, torch.float32)
        freqs = 1.0 / torch.pow(torch.tensor(self.rope_base, dtype=calc, device=x.device),
                                torch.arange(half, dtype=calc, device=x.device) / half)
        ang = torch.outer(positions.to(calc), freqs)
        cos = ang.cos().to(x.dtype)
        sin = ang.sin().to(x.dtype)
        first, second = x.split(half, dim=-1)
        return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, G, dh = self.num_heads, self.num_kv_heads, self.d_head
        n_past = cache[0].shape[2] if cache is not None else 0
        positions = torch.arange(n_past, n_past + T, device=x.device)

        q = self._rope(self.W_q(x).view(B, T, H, dh).transpose(1, 2), positions)
        k_new = self._rope(self.W_k(x).view(B, T, G, dh).transpose(1, 2), positions)
        v_new = self.W_v(x).view(B, T, G, dh).transpose(1, 2)
        k_all = k_new if cache is None else torch.cat([cache[0], k_new], dim=2)
        v_all = v_new if cache is None else torch.cat([cache[1], v_new], dim=2)
        S = k_all.shape[2]

        k_full = k_all.repeat_interleave(H // G, dim=1).reshape(B * H, S, dh)
        v_full = v_all.repeat_interleave(H // G, dim=1).reshape(B * H, S, dh)
        q_flat = q.reshape(B * H, T, dh)

        bias = torch.zeros(T, S, dtype=x.dtype, device=x.device)
        bias = bias.masked_fill(torch.ones(T, S, dtype=torch.bool, device=x.device).triu(n_past + 1), float("-inf"))
        scores = torch.baddbmm(bias.expand(B * H, T, S), q_flat, k_full.transpose(1, 2))  # MISTAKE
        weights = torch.softmax(scores, dim=-1)
        ctx = torch.bmm(weights, v_full).view(B, H, T, dh)
        ctx = ctx.permute(0, 2, 1, 3).reshape(B, T, D)
        return self.W_o(ctx), (k_all, v_all)
