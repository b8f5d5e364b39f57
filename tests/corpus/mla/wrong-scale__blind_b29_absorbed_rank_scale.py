import math
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.to(torch.promote_types(x.dtype, torch.float32))
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return xf.type_as(x) * self.weight


def precompute_freqs_cis(dim, end, base, device):
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim))
    t = torch.arange(end, dtype=torch.float64, device=device)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)            # complex128 (end, dim/2)


def apply_rotary_emb(x, freqs_cis):
    # half-split pairs (i, i + d/2) as the real and imaginary parts
    half = x.shape[-1] // 2
    xc = torch.complex(x[..., :half].double(), x[..., half:].double())
    shape = [freqs_cis.shape[0]] + [1] * (x.dim() - 3) + [half]
    y = xc * freqs_cis.view(shape)
    return torch.cat([y.real, y.imag], dim=-1).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_rank
        self.qk_nope_head_dim = d_nope
        self.qk_rope_head_dim = d_rope
        self.v_head_dim = d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.softmax_scale = 1.0 / math.sqrt(kv_rank + d_rope)  # MISTAKE

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].shape[1]
        end_pos = start_pos + seqlen
        freqs_cis = precompute_freqs_cis(self.qk_rope_head_dim, end_pos, self.rope_base, x.device)[start_pos:end_pos]

        q = self.W_q(x).view(bsz, seqlen, self.n_heads, -1)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)

        kv = self.W_kv_a(x)
        kv, k_pe = torch.split(kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        kv = self.kv_norm(kv)
        k_pe = apply_rotary_emb(k_pe, freqs_cis)
        if cache is not None:
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)

        wkv_b = self.W_kv_b.weight.view(self.n_heads, -1, self.kv_lora_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :self.qk_nope_head_dim])
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv) +
                  torch.einsum("bshr,btr->bsht", q_pe, k_pe)) * self.softmax_scale
        mask = torch.full((seqlen, end_pos), float("-inf"), device=x.device).triu_(start_pos + 1)
        scores = scores + mask.to(scores.dtype).unsqueeze(1)
        scores = scores.softmax(dim=-1)
        x_out = torch.einsum("bsht,btc->bshc", scores, kv)
        x_out = torch.einsum("bshc,hdc->bshd", x_out, wkv_b[:, -self.v_head_dim:])
        return self.W_o(x_out.flatten(2)), (kv, k_pe)
