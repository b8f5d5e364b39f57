import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        in_dtype = x.dtype
        x32 = x.to(torch.promote_types(in_dtype, torch.float32))
        inv_rms = (x32.square().mean(dim=-1, keepdim=True) + self.eps).rsqrt()
        return (x32 * inv_rms).to(in_dtype) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.H = num_heads
        self.Hkv = num_kv_heads
        self.dh = d_model // num_heads
        self.rope_base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.dh, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.dh, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def rope(self, t, positions):
        dh = t.size(-1)
        half = dh // 2
        wdt = torch.promote_types(t.dtype, torch.float32)
        idx = torch.arange(half, device=t.device, dtype=wdt)
        inv = self.rope_base ** (-2.0 * idx / dh)
        ang = positions.to(wdt).unsqueeze(-1) * inv
        if ang.dim() == 3:
            ang = ang[:, None, :, :]
        cos = ang.cos().to(t.dtype)
        sin = ang.sin().to(t.dtype)
        lo, hi = t[..., :half], t[..., half:]
        return torch.cat((lo * cos - hi * sin, hi * cos + lo * sin), dim=-1)

    def forward(self, x, positions=None):
        B, T, D = x.shape
        if positions is None:
            positions = torch.arange(T, device=x.device)

        a = self.attn_norm(x)
        q = self.W_q(a).reshape(B, T, self.H, self.dh).transpose(1, 2)
        k = self.W_k(a).reshape(B, T, self.Hkv, self.dh).transpose(1, 2)
        v = self.W_v(a).reshape(B, T, self.Hkv, self.dh).transpose(1, 2)
        q = self.rope(q, positions)
        k = self.rope(k, positions)
        group = self.H // self.Hkv
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)

        att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.dh))
        blocked = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=0)  # MISTAKE
        att = att.masked_fill(blocked, torch.finfo(att.dtype).min)
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, D)
        h = x + self.W_o(y)

        return h + self.ffn(self.ffn_norm(h))
