import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + self.eps)
        return x / rms * self.weight


class RotaryEmbedding(nn.Module):
    """Half-split RoPE (GPT-NeoX / HF LLaMA). No parameters, angles built on the fly."""

    def __init__(self, dim: int, base: float = 10000.0):
        super().__init__()
        assert dim % 2 == 0
        self.dim = dim
        self.base = base

    def forward(self, x: torch.Tensor, offset: int) -> torch.Tensor:
        # x (..., T, dim); positions offset .. offset + T - 1
        T = x.shape[-2]
        f = torch.promote_types(x.dtype, torch.float32)
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.dim, 2, device=x.device, dtype=f) / self.dim))
        t = torch.arange(offset, offset + T, device=x.device, dtype=f)
        ang = torch.einsum("t,f->tf", t, inv_freq)
        cos, sin = ang.cos(), ang.sin()
        x1, x2 = x.to(f).chunk(2, dim=-1)
        y = torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
        return y.type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope = d_nope
        self.d_rope = d_rope
        self.d_v = d_v
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.rope = RotaryEmbedding(d_rope, rope_base)
        self.scale = (d_nope + d_rope) ** -0.5

    def forward(self, x, cache=None):
        B, L, _ = x.shape
        H = self.num_heads
        offset = 0 if cache is None else cache[0].shape[1]

        q = self.W_q(x).view(B, L, H, -1).transpose(1, 2)          # B H L dn+dr
        q_nope, q_pe = torch.split(q, [self.d_nope, self.d_rope], -1)
        q_pe = self.rope(q_pe, offset)

        ckv, kpe = torch.split(self.W_kv_a(x), [self.kv_rank, self.d_rope], -1)
        ckv = self.kv_norm(ckv)
        kpe = self.rope(kpe, offset)                                 # B L dr, shared by heads
        if cache is not None:
            ckv = torch.cat([cache[0], ckv], 1)
            kpe = torch.cat([cache[1], kpe], 1)
        S = ckv.shape[1]

        kv = self.W_kv_b(ckv).view(B, S, H, self.d_nope + self.d_v)
        k_nope, value = torch.split(kv, [self.d_nope, self.d_v], -1)

        logits = torch.einsum("bhld,bshd->bhls", q_nope, k_nope)
        logits = logits + torch.einsum("bhld,bsd->bhls", q_pe, kpe)
        logits = logits * self.scale
        future = torch.triu(torch.ones(L, S, dtype=torch.bool, device=x.device), diagonal=S - L + 1)
        logits = logits.masked_fill(future, float("-inf"))
        w = F.softmax(logits, dim=-1)
        o = torch.einsum("bhls,bshd->blhd", w, value).reshape(B, L, H * self.d_v)
        return self.W_o(o), (ckv, kpe)
