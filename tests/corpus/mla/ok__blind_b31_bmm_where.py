import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        if x.dtype in (torch.float16, torch.bfloat16):
            return self._norm(x.float()).type_as(x) * self.weight
        return self._norm(x) * self.weight


def apply_rope(x, cos, sin):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.h = num_heads
        self.r = kv_rank
        self.dn, self.dr, self.dv = d_nope, d_rope, d_v
        self.dqk = d_nope + d_rope
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * self.dqk, bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def _tables(self, pos, dtype):
        f = torch.float64 if dtype == torch.float64 else torch.float32
        j = torch.arange(self.dr // 2, device=pos.device, dtype=f)
        ang = pos.to(f).unsqueeze(-1) * torch.pow(torch.tensor(self.base, dtype=f, device=pos.device),
                                                  -2.0 * j / self.dr)
        return ang.cos().to(dtype), ang.sin().to(dtype)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.h
        past = cache[1].size(1) if cache is not None else 0

        q = self.W_q(x).reshape(B, T, H, self.dqk).permute(0, 2, 1, 3)
        q_nope, q_rot = q[..., :self.dn], q[..., self.dn:]
        a = self.W_kv_a(x)
        latent, k_rot = self.kv_norm(a[..., :self.r]), a[..., self.r:]

        qpos = torch.arange(T, device=x.device) + past
        cos, sin = self._tables(qpos, x.dtype)
        q_rot = apply_rope(q_rot, cos, sin)
        k_rot = apply_rope(k_rot, cos, sin)
        if cache is not None:
            latent = torch.cat((cache[0], latent), dim=1)
            k_rot = torch.cat((cache[1], k_rot), dim=1)
        S = latent.shape[1]

        kv = self.W_kv_b(latent).reshape(B, S, H, self.dn + self.dv).permute(0, 2, 1, 3)
        k_nope, v = kv[..., :self.dn], kv[..., self.dn:]
        qq = torch.cat([q_nope, q_rot], -1).reshape(B * H, T, self.dqk)
        kk = torch.cat([k_nope, k_rot.unsqueeze(1).expand(B, H, S, self.dr)], -1).reshape(B * H, S, self.dqk)
        logits = torch.bmm(qq, kk.transpose(1, 2)) / math.sqrt(self.dqk)

        kpos = torch.arange(S, device=x.device)
        visible = kpos[None, :] <= qpos[:, None]
        logits = torch.where(visible, logits, torch.full_like(logits, float("-inf")))
        probs = F.softmax(logits, dim=-1)

        ctx = torch.bmm(probs, v.reshape(B * H, S, self.dv))
        ctx = ctx.view(B, H, T, self.dv).transpose(1, 2).reshape(B, T, H * self.dv)
        return self.W_o(ctx), (latent, k_rot)
