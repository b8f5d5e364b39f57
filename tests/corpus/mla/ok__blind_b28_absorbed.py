import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        # half inputs are normalised in fp32 and cast back; fp32/fp64 stay as they are
        xf = x.to(torch.promote_types(x.dtype, torch.float32))
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return xf.to(x.dtype) * self.weight


def apply_rope(x, positions, base):
    d = x.size(-1)
    half = d // 2
    wide = torch.promote_types(x.dtype, torch.float32)
    freqs = 1.0 / base ** (torch.arange(half, device=x.device, dtype=wide) * 2 / d)
    theta = torch.outer(positions.to(wide), freqs)
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    """Absorbed MLA, the way DeepSeek-V3 runs inference: attention is done against the latent."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_rank = kv_rank
        self.qk_nope_head_dim = d_nope
        self.qk_rope_head_dim = d_rope
        self.qk_head_dim = d_nope + d_rope
        self.v_head_dim = d_v
        self.rope_base = rope_base
        self.softmax_scale = self.qk_head_dim ** -0.5
        self.W_q = nn.Linear(d_model, num_heads * self.qk_head_dim, bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].size(1)
        end_pos = start_pos + seqlen
        positions = torch.arange(start_pos, end_pos, device=x.device)

        q = self.W_q(x).view(bsz, seqlen, self.n_heads, self.qk_head_dim)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_rope(q_pe.transpose(1, 2), positions, self.rope_base).transpose(1, 2)

        kv = self.W_kv_a(x)
        kv, k_pe = torch.split(kv, [self.kv_rank, self.qk_rope_head_dim], dim=-1)
        kv = self.kv_norm(kv)
        k_pe = apply_rope(k_pe, positions, self.rope_base)
        if cache is not None:
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)

        wkv_b = self.W_kv_b.weight.view(self.n_heads, -1, self.kv_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :self.qk_nope_head_dim])
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv) +
                  torch.einsum("bshr,btr->bsht", q_pe, k_pe)) * self.softmax_scale

        mask = torch.full((seqlen, end_pos), float("-inf"), device=x.device).triu_(start_pos + 1)
        scores = scores + mask.to(scores.dtype).unsqueeze(1)
        scores = scores.softmax(dim=-1)

        o = torch.einsum("bsht,btc->bshc", scores, kv)
        o = torch.einsum("bshc,hdc->bshd", o, wkv_b[:, -self.v_head_dim:])
        o = self.W_o(o.flatten(2))
        return o, (kv, k_pe)
