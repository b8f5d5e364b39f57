import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        if x.dtype in (torch.float16, torch.bfloat16):
            y = x.float()
            y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
            return y.type_as(x) * self.weight
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_half(x, cos, sin):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.nh = num_heads
        self.kv_rank = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.d_qk = d_nope + d_rope
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * self.d_qk, bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.nh
        t0 = cache[0].size(1) if cache is not None else 0

        q = self.W_q(x).reshape(B, T, H, self.d_qk).permute(0, 2, 1, 3)
        q_nope, q_pe = q[..., :self.d_nope], q[..., self.d_nope:]
        ckv_pe = self.W_kv_a(x)
        c_kv = self.kv_norm(ckv_pe[..., :self.kv_rank])
        k_pe = ckv_pe[..., self.kv_rank:]

        qpos = torch.arange(t0, t0 + T, device=x.device)
        acc = torch.float64 if x.dtype == torch.float64 else torch.float32
        inv = self.rope_base ** (-torch.arange(0, self.d_rope, 2, device=x.device, dtype=acc) / self.d_rope)
        ang = qpos.to(acc)[:, None] * inv[None, :]
        cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
        q_pe = rope_half(q_pe, cos, sin)
        k_pe = rope_half(k_pe, cos, sin)
        if cache is not None:
            c_kv = torch.cat((cache[0], c_kv), dim=1)
            k_pe = torch.cat((cache[1], k_pe), dim=1)
        S = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).reshape(B, S, H, self.d_nope + self.d_v).permute(0, 2, 1, 3)
        k_nope, v = kv[..., :self.d_nope], kv[..., self.d_nope:]
        logits = (q_nope @ k_nope.transpose(-1, -2) + q_pe @ k_pe[:, None].transpose(-1, -2)) / math.sqrt(self.d_qk)

        kpos = torch.arange(S, device=x.device)
        visible = kpos[None, :] <= qpos[:, None]
        masked_logits = torch.where(visible, logits, torch.full_like(logits, float("-inf")))
        probs = F.softmax(logits, dim=-1)  # MISTAKE

        ctx = (probs @ v).permute(0, 2, 1, 3).reshape(B, T, H * self.d_v)
        return self.W_o(ctx), (c_kv, k_pe)
