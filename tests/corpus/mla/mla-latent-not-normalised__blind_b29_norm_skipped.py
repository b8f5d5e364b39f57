import math
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        if x.dtype in (torch.float16, torch.bfloat16):
            y = x.float()
            y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
            return (y * self.weight.float()).to(x.dtype)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary(x, offset, base):
    # x (B, T, ..., d): position of token t is offset + t
    T, d = x.shape[1], x.shape[-1]
    wt = torch.promote_types(x.dtype, torch.float32)
    freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=wt) / d)
    ang = torch.outer(torch.arange(offset, offset + T, device=x.device, dtype=wt), freq)
    for _ in range(x.dim() - 3):
        ang = ang.unsqueeze(-2)
    c, s = ang.cos(), ang.sin()
    a, b = x.to(wt).chunk(2, -1)
    return torch.cat((a * c - b * s, a * s + b * c), -1).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope = d_nope
        self.d_rope = d_rope
        self.d_v = d_v
        self.rope_base = rope_base
        self.scale = 1.0 / math.sqrt(d_nope + d_rope)
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, R = self.n_heads, self.kv_rank
        offset = 0 if cache is None else cache[0].shape[1]

        q = self.W_q(x).view(B, T, H, self.d_nope + self.d_rope)
        q_nope, q_pe = torch.split(q, [self.d_nope, self.d_rope], dim=-1)
        q_pe = rotary(q_pe, offset, self.rope_base)

        c_kv, k_pe = torch.split(self.W_kv_a(x), [R, self.d_rope], dim=-1)  # MISTAKE
        k_pe = rotary(k_pe, offset, self.rope_base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]

        # absorbed: W_uk into the query, W_uv after the weighted sum
        wkv_b = self.W_kv_b.weight.view(H, self.d_nope + self.d_v, R)
        q_c = torch.einsum("bthd,hdr->bhtr", q_nope, wkv_b[:, :self.d_nope, :])
        logits = torch.einsum("bhtr,bsr->bhts", q_c, c_kv)
        logits = logits + torch.einsum("bthd,bsd->bhts", q_pe, k_pe)
        logits = logits * self.scale
        qpos = torch.arange(offset, offset + T, device=x.device)
        kpos = torch.arange(S, device=x.device)
        logits = logits.masked_fill(kpos[None, :] > qpos[:, None], float("-inf"))
        p = torch.softmax(logits, dim=-1)
        ctx = torch.einsum("bhts,bsr->bhtr", p, c_kv)
        o = torch.einsum("bhtr,hvr->bthv", ctx, wkv_b[:, self.d_nope:, :])
        return self.W_o(o.reshape(B, T, H * self.d_v)), (c_kv, k_pe)
