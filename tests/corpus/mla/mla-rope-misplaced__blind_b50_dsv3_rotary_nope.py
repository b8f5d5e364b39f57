import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float() if x.element_size() < 4 else x
        var = xf.pow(2).mean(dim=-1, keepdim=True)
        return (xf * torch.rsqrt(var + self.eps)).to(x.dtype) * self.weight


def rotary(x, pos, base):
    """x (B, T, H, d): turn the pairs (i, i + d/2) of every head by pos * base ** (-2i/d)."""
    d = x.size(-1)
    rdt = torch.promote_types(x.dtype, torch.float32)
    freqs = base ** (-torch.arange(0, d, 2, device=x.device, dtype=rdt) / d)
    angles = torch.outer(pos.to(rdt), freqs)
    freqs_cis = torch.polar(torch.ones_like(angles), angles).view(1, x.size(1), 1, d // 2)
    xc = torch.complex(x[..., : d // 2].to(rdt), x[..., d // 2:].to(rdt)) * freqs_cis
    return torch.cat([xc.real, xc.imag], dim=-1).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_rank
        self.qk_nope_head_dim = d_nope
        self.qk_rope_head_dim = d_rope
        self.v_head_dim = d_v
        self.rope_theta = rope_base
        self.softmax_scale = 1.0 / math.sqrt(d_nope + d_rope)
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = cache[0].size(1) if cache is not None else 0
        end_pos = start_pos + seqlen
        pos = torch.arange(start_pos, end_pos, device=x.device)

        q = self.W_q(x).view(bsz, seqlen, self.n_heads, -1)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_nope = rotary(q_nope, pos, self.rope_theta)  # MISTAKE: RoPE turns q_nope, q_pe is left unrotated
        kv, k_pe = torch.split(self.W_kv_a(x), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        kv = self.kv_norm(kv)
        k_pe = rotary(k_pe.unsqueeze(2), pos, self.rope_theta).squeeze(2)
        if cache is not None:
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)

        kv_full = self.W_kv_b(kv).view(bsz, end_pos, self.n_heads, self.qk_nope_head_dim + self.v_head_dim)
        k_nope, v = torch.split(kv_full, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)
        k = torch.cat([k_nope, k_pe.unsqueeze(2).expand(-1, -1, self.n_heads, -1)], dim=-1)
        q = torch.cat([q_nope, q_pe], dim=-1)

        scores = torch.einsum("bshd,bthd->bsht", q, k) * self.softmax_scale
        mask = torch.full((seqlen, end_pos), float("-inf"), device=x.device, dtype=scores.dtype).triu_(start_pos + 1)
        scores = scores + mask.unsqueeze(1)
        scores = scores.softmax(dim=-1)
        out = torch.einsum("bsht,bthd->bshd", scores, v)
        return self.W_o(out.flatten(2)), (kv, k_pe)
