import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + self.eps)


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):
        super().__init__()
        assert d_model % num_heads == 0 and num_heads % num_kv_heads == 0
        self.n_heads, self.n_kv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.rope_base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.ffn = SwiGLU(d_model, d_ff)

    def _rope(self, x, positions):
        # half-split pairs (i, i + d/2) as one complex number each
        half = x.shape[-1] // 2
        work = torch.promote_types(x.dtype, torch.float32)
        exps = torch.arange(half, device=x.device, dtype=work) * 2 / x.shape[-1]
        inv = self.rope_base ** -exps
        ang = positions.to(work)[..., None] * inv
        rot = torch.polar(torch.ones_like(ang), ang)
        rot = rot[:, None] if rot.dim() == 3 else rot[None, None]
        xw = x.to(work)
        z = torch.complex(xw[..., :half], xw[..., half:]) * rot
        return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)

    def forward(self, x, positions=None):
        B, T, D = x.shape
        H, Hkv, d = self.n_heads, self.n_kv, self.hd
        g = H // Hkv
        if positions is None:
            positions = torch.arange(T, device=x.device)

        y = self.attn_norm(x)
        q = self.W_q(y).view(B, T, H, d).transpose(1, 2)
        k = self.W_k(y).view(B, T, Hkv, d).transpose(1, 2)
        v = self.W_v(y).view(B, T, Hkv, d).transpose(1, 2)
        q, k = self._rope(q, positions), self._rope(k, positions)

        q = q.reshape(B, Hkv, g, T, d)  # query head h -> kv head h // g
        s = torch.einsum("bngtd,bnsd->bngts", q, k) / math.sqrt(d)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        s = s.masked_fill(future, float("-inf"))
        p = torch.softmax(s, dim=-1)
        o = torch.einsum("bngts,bnsd->bngtd", p, v).reshape(B, H, T, d)
        o = o.transpose(1, 2).reshape(B, T, D)

        h = x + self.W_o(o)
        return h + self.ffn(self.ffn_norm(h))
