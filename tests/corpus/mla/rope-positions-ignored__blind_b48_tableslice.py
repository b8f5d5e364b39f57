import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        dt = x.dtype
        x = x.float() if dt in (torch.float16, torch.bfloat16) else x
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x.to(dt) * self.weight


def build_rope_table(seq_len, dim, base, device):
    """cos and sin for positions 0 .. seq_len - 1, each (seq_len, dim) in the half-split layout."""
    inv_freq = base ** (-torch.arange(0, dim, 2, device=device, dtype=torch.float32) / dim)
    t = torch.arange(seq_len, device=device, dtype=torch.float32)
    freqs = torch.einsum("i,j->ij", t, inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos.to(x.dtype) + rot * sin.to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope = d_nope
        self.d_rope = d_rope
        self.d_v = d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        nh = self.num_heads
        past = cache[0].shape[1] if cache is not None else 0
        total = past + seqlen

        cos, sin = build_rope_table(total, self.d_rope, self.rope_base, x.device)
        cos, sin = cos[:seqlen], sin[:seqlen]  # MISTAKE: rows 0 .. seqlen-1, the new tokens need rows past .. total-1

        q = self.W_q(x).view(bsz, seqlen, nh, -1)
        q_nope, q_pe = torch.split(q, [self.d_nope, self.d_rope], dim=-1)
        q_pe = rotate(q_pe.transpose(1, 2), cos, sin)  # (bsz, nh, seqlen, d_rope)

        kv_a = self.W_kv_a(x)
        c_kv, k_pe = torch.split(kv_a, [self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = rotate(k_pe, cos, sin)  # (bsz, seqlen, d_rope)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)

        kv = self.W_kv_b(c_kv).view(bsz, total, nh, self.d_nope + self.d_v)
        k_nope, v = torch.split(kv, [self.d_nope, self.d_v], dim=-1)

        scale = (self.d_nope + self.d_rope) ** -0.5
        scores = torch.einsum("bshd,bthd->bhst", q_nope, k_nope)
        scores = scores + torch.einsum("bhsr,btr->bhst", q_pe, k_pe)
        scores = scores * scale
        mask = torch.ones(seqlen, total, dtype=torch.bool, device=x.device).tril(diagonal=past)
        scores = scores.masked_fill(~mask, float("-inf"))
        probs = F.softmax(scores, dim=-1)
        out = torch.einsum("bhst,bthd->bshd", probs, v).reshape(bsz, seqlen, nh * self.d_v)
        return self.W_o(out), (c_kv, k_pe)
