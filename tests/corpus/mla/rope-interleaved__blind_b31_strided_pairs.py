import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        dt = x.dtype
        h = x.to(torch.float32) if dt in (torch.float16, torch.bfloat16) else x
        h = h * torch.rsqrt(torch.mean(h * h, dim=-1, keepdim=True) + self.eps)
        return self.weight * h.to(dt)


def rotary(x, cos, sin):
    # cos, sin: (T, d/2)
    x1, x2 = x[..., 0::2], x[..., 1::2]  # MISTAKE
    y1 = x1 * cos - x2 * sin
    y2 = x2 * cos + x1 * sin
    return torch.stack((y1, y2), dim=-1).flatten(-2)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope = d_nope
        self.d_rope = d_rope
        self.d_v = d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.num_heads
        past = 0 if cache is None else cache[0].shape[1]

        q = self.W_q(x).view(B, T, H, self.d_nope + self.d_rope).transpose(1, 2)
        q_nope, q_pe = q.split([self.d_nope, self.d_rope], dim=-1)
        c_kv, k_pe = self.W_kv_a(x).split([self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)

        f = torch.float64 if x.dtype == torch.float64 else torch.float32
        pos = torch.arange(past, past + T, device=x.device, dtype=f)
        inv_freq = 1.0 / self.rope_base ** (torch.arange(0, self.d_rope, 2, device=x.device, dtype=f) / self.d_rope)
        freqs = torch.outer(pos, inv_freq)
        cos, sin = freqs.cos().to(x.dtype), freqs.sin().to(x.dtype)
        q_pe = rotary(q_pe, cos, sin)
        k_pe = rotary(k_pe, cos, sin)

        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]
        k_nope, v = self.W_kv_b(c_kv).view(B, S, H, -1).transpose(1, 2).split([self.d_nope, self.d_v], dim=-1)

        qk = torch.cat([q_nope, q_pe], dim=-1)
        kk = torch.cat([k_nope, k_pe.unsqueeze(1).expand(B, H, S, self.d_rope)], dim=-1)
        att = qk @ kk.transpose(-2, -1) * (1.0 / (self.d_nope + self.d_rope) ** 0.5)
        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)
        att = att.masked_fill(allowed.logical_not(), float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, H * self.d_v)
        return self.W_o(y), (c_kv, k_pe)
