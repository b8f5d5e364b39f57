import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        ms = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(ms + self.eps) * self.weight


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_rank
        self.qk_nope_head_dim = d_nope
        self.qk_rope_head_dim = d_rope
        self.qk_head_dim = d_nope + d_rope
        self.v_head_dim = d_v
        self.rope_theta = rope_base
        self.W_q = nn.Linear(d_model, num_heads * self.qk_head_dim, bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.softmax_scale = self.qk_head_dim ** -0.5

    def freqs_cis(self, positions):
        steps = torch.arange(0, self.qk_rope_head_dim, 2, dtype=torch.float64, device=positions.device)
        inv_freq = 1.0 / (self.rope_theta ** (steps / self.qk_head_dim))  # MISTAKE
        ang = torch.outer(positions.to(torch.float64), inv_freq)
        return torch.polar(torch.ones_like(ang), ang)

    @staticmethod
    def rotate(x, fc):
        half = x.shape[-1] // 2
        work = torch.float64 if x.dtype == torch.float64 else torch.float32
        z = torch.complex(x[..., :half].to(work), x[..., half:].to(work)) * fc.to(
            torch.complex128 if work == torch.float64 else torch.complex64)
        return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].shape[1]
        end_pos = start_pos + seqlen
        fc = self.freqs_cis(torch.arange(start_pos, end_pos, device=x.device))

        q = self.W_q(x).view(bsz, seqlen, self.n_heads, self.qk_head_dim).transpose(1, 2)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = self.rotate(q_pe, fc)
        kv, k_pe = torch.split(self.W_kv_a(x), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        kv = self.kv_norm(kv)
        k_pe = self.rotate(k_pe, fc)
        if cache is not None:
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)

        w = self.W_kv_b.weight.view(self.n_heads, self.qk_nope_head_dim + self.v_head_dim, self.kv_lora_rank)
        q_abs = torch.matmul(q_nope, w[:, :self.qk_nope_head_dim])  # (b, h, s, c)
        scores = torch.matmul(q_abs, kv.unsqueeze(1).transpose(-1, -2)) \
            + torch.matmul(q_pe, k_pe.unsqueeze(1).transpose(-1, -2))
        scores = scores * self.softmax_scale
        mask = torch.ones(seqlen, end_pos, dtype=torch.bool, device=x.device).tril(start_pos)
        scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=scores.dtype, device=x.device))
        p = scores.softmax(-1)
        o = torch.matmul(p, kv.unsqueeze(1))  # (b, h, s, c)
        o = torch.matmul(o, w[:, self.qk_nope_head_dim:].transpose(-1, -2))  # (b, h, s, v)
        return self.W_o(o.transpose(1, 2).flatten(2)), (kv, k_pe)
