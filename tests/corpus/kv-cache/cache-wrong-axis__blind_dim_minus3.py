"""Appends new keys/values to the cache with dim=-3 (the kv-head axis) instead of the time axis."""
import torch
from torch import nn


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.H, self.G, self.base = num_heads, num_kv_heads, rope_base
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def _rope(self, t, start):
        half = self.d // 2
        pos = torch.arange(start, start + t.shape[-2], device=t.device, dtype=torch.float32)
        ang = pos[:, None] * self.base ** (-2 * torch.arange(half, device=t.device, dtype=torch.float32) / self.d)
        c, s = ang.cos().to(t.dtype), ang.sin().to(t.dtype)
        a, b = t[..., :half], t[..., half:]
        return torch.cat([a * c - b * s, b * c + a * s], dim=-1)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        g = self.H // self.G
        start = cache[0].size(2) if cache is not None else 0
        q = self._rope(self.W_q(x).view(B, T, self.H, self.d).permute(0, 2, 1, 3), start)
        k = self._rope(self.W_k(x).view(B, T, self.G, self.d).permute(0, 2, 1, 3), start)
        v = self.W_v(x).view(B, T, self.G, self.d).permute(0, 2, 1, 3)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=-3)
            v = torch.cat((cache[1], v), dim=-3)
        S = k.shape[-2]
        qg = q.reshape(B, self.G, g, T, self.d)
        s = torch.einsum("bngtd,bnsd->bngts", qg, k) * self.d ** -0.5
        qpos = torch.arange(T, device=x.device)[:, None] + (S - T)
        kpos = torch.arange(S, device=x.device)[None, :]
        s = torch.where(kpos <= qpos, s, torch.tensor(float("-inf"), dtype=s.dtype, device=s.device))
        p = s.softmax(-1)
        o = torch.einsum("bngts,bnsd->bngtd", p, v).reshape(B, self.H, T, self.d)
        return self.W_o(o.permute(0, 2, 1, 3).reshape(B, T, D)), (k, v)
