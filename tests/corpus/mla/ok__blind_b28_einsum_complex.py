import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        ms = torch.einsum("...i,...i->...", x, x).unsqueeze(-1) / x.shape[-1]
        return self.weight * (x / torch.sqrt(ms + self.eps))


def rope_complex(x, pos, base=10000.0):
    """Half-split RoPE via complex numbers: pair i is (x[i], x[i + d/2])."""
    d = x.shape[-1]
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    freqs = torch.pow(base, -torch.arange(0, d, 2, dtype=work, device=x.device) / d)
    angles = torch.einsum("t,f->tf", pos.to(work), freqs)
    rot = torch.polar(torch.ones_like(angles), angles)            # (T, d/2) complex
    xw = x.to(work)
    z = torch.view_as_complex(torch.stack((xw[..., : d // 2], xw[..., d // 2:]), dim=-1).contiguous())
    zr = torch.view_as_real(z * rot)                              # (..., T, d/2, 2)
    return torch.cat((zr[..., 0], zr[..., 1]), dim=-1).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    """DeepSeek-V2/V3 multi-head latent attention: keys and values are rebuilt from a small cached latent."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.h, self.r = num_heads, kv_rank
        self.dn, self.dr, self.dv = d_nope, d_rope, d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        b, t, _ = x.shape
        t0 = cache[0].shape[1] if cache is not None else 0
        pos = torch.arange(t0, t0 + t, device=x.device)

        q = self.W_q(x).unflatten(-1, (self.h, self.dn + self.dr))     # b t h e
        q_nope, q_pe = q[..., : self.dn], q[..., self.dn:]
        q_pe = rope_complex(q_pe.transpose(1, 2), pos, self.base)      # b h t r

        a = self.W_kv_a(x)
        c_kv = self.kv_norm(a[..., : self.r])
        k_pe = rope_complex(a[..., self.r:], pos, self.base)           # b t r
        if cache is not None:
            c_kv = torch.cat((cache[0], c_kv), 1)
            k_pe = torch.cat((cache[1], k_pe), 1)
        tk = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).unflatten(-1, (self.h, self.dn + self.dv))  # b s h f
        k_nope, v = kv[..., : self.dn], kv[..., self.dn:]

        s = torch.einsum("bthd,bshd->bhts", q_nope, k_nope)
        s = s + torch.einsum("bhtr,bsr->bhts", q_pe, k_pe)
        s = s * (self.dn + self.dr) ** -0.5
        i = torch.arange(t, device=x.device)[:, None] + (tk - t)
        j = torch.arange(tk, device=x.device)[None, :]
        s = s.masked_fill(j > i, float("-inf"))
        p = s.softmax(-1)
        o = torch.einsum("bhts,bshd->bthd", p, v).flatten(2)
        return self.W_o(o), (c_kv, k_pe)
