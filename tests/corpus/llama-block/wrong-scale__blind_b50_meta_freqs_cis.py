import math

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.to(torch.promote_types(x.dtype, torch.float32))).type_as(x)
        return output * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def precompute_freqs_cis(dim, positions, theta, dtype):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, device=positions.device, dtype=dtype)[: dim // 2] / dim))
    angles = positions.to(dtype)[..., None] * freqs  # (T, dim/2) or (B, T, dim/2)
    return torch.polar(torch.ones_like(angles), angles)


def reshape_for_broadcast(freqs_cis, x):
    # x (B, T, H, d/2); freqs_cis (T, d/2) or (B, T, d/2)
    if freqs_cis.dim() == 2:
        return freqs_cis[None, :, None, :]
    return freqs_cis[:, :, None, :]


def apply_rotary_emb(xq, xk, freqs_cis):
    rdt = freqs_cis.real.dtype
    # half-split pairs (i, i + d/2) as (real, imag), not Meta's adjacent pairs
    xq_ = torch.complex(*xq.to(rdt).chunk(2, dim=-1))
    xk_ = torch.complex(*xk.to(rdt).chunk(2, dim=-1))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = xq_ * freqs_cis
    xk_out = xk_ * freqs_cis
    xq_out = torch.cat([xq_out.real, xq_out.imag], dim=-1)
    xk_out = torch.cat([xk_out.real, xk_out.imag], dim=-1)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return (
        x[:, :, :, None, :]
        .expand(bs, slen, n_kv_heads, n_rep, head_dim)
        .reshape(bs, slen, n_kv_heads * n_rep, head_dim)
    )


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv_heads = num_kv_heads
        self.n_rep = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_theta = rope_base
        self.scale = 1.0 / math.sqrt(d_model // num_kv_heads)  # MISTAKE: d_model // num_kv_heads is not the head dim d_model // num_heads
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(num_heads * self.head_dim, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def attention(self, x, freqs_cis, mask):
        bsz, seqlen, _ = x.shape
        xq = self.W_q(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.W_k(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = self.W_v(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis)

        keys = repeat_kv(xk, self.n_rep)
        values = repeat_kv(xv, self.n_rep)

        xq = xq.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) * self.scale
        scores = scores + mask
        scores = F.softmax(scores, dim=-1, dtype=torch.promote_types(scores.dtype, torch.float32)).type_as(xq)
        output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.W_o(output)

    def forward(self, x, positions=None):
        bsz, seqlen, _ = x.shape
        if positions is None:
            positions = torch.arange(seqlen, device=x.device)
        freqs_cis = precompute_freqs_cis(self.head_dim, positions, self.rope_theta,
                                         torch.promote_types(x.dtype, torch.float32))
        mask = torch.full((seqlen, seqlen), float("-inf"), device=x.device, dtype=x.dtype)
        mask = torch.triu(mask, diagonal=1)
        h = x + self.attention(self.attn_norm(x), freqs_cis, mask)
        out = h + self.ffn(self.ffn_norm(h))
        return out
