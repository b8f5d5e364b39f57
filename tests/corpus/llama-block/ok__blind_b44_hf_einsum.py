import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        work = x.float() if x.element_size() < 4 else x
        return self._norm(work).type_as(x) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_cos_sin(positions, head_dim, base, dtype):
    calc = dtype if dtype in (torch.float32, torch.float64) else torch.float32
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=positions.device, dtype=calc) / head_dim))
    freqs = positions.to(calc)[..., None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
    if cos.dim() == 3:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return cos, sin


def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    b, hkv, t, hd = x.shape
    return x[:, :, None, :, :].expand(b, hkv, n_rep, t, hd).reshape(b, hkv * n_rep, t, hd)


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv = num_kv_heads
        self.head_dim = d_model // num_heads
        self.base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def _attn(self, x, positions):
        bsz, seq, dm = x.shape
        hd = self.head_dim
        q = self.W_q(x).view(bsz, seq, self.n_heads, hd).transpose(1, 2)
        k = self.W_k(x).view(bsz, seq, self.n_kv, hd).transpose(1, 2)
        v = self.W_v(x).view(bsz, seq, self.n_kv, hd).transpose(1, 2)

        cos, sin = rope_cos_sin(positions, hd, self.base, x.dtype)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin

        k = repeat_kv(k, self.n_heads // self.n_kv)
        v = repeat_kv(v, self.n_heads // self.n_kv)

        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(hd)
        qi = torch.arange(seq, device=x.device)[:, None]
        kj = torch.arange(seq, device=x.device)[None, :]
        scores = torch.where(kj <= qi, scores, torch.full_like(scores, float("-inf")))
        probs = scores.softmax(dim=-1)
        out = torch.einsum("bhqk,bhkd->bqhd", probs, v).reshape(bsz, seq, dm)
        return self.W_o(out)

    def forward(self, x, positions=None):
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)
        h = x + self._attn(self.attn_norm(x), positions)
        return h + self.ffn(self.ffn_norm(h))
