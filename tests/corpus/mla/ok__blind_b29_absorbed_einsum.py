import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        ct = torch.promote_types(x.dtype, torch.float32)
        h = x.to(ct)
        h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (h * self.weight.to(ct)).to(x.dtype)


def precompute_rope(dim, n_pos, base):
    inv = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    ang = torch.outer(torch.arange(n_pos, dtype=torch.float64), inv)
    return ang.cos(), ang.sin()


class MultiHeadLatentAttention(nn.Module):
    """Absorbed MLA (DeepSeek-V3 inference style)."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.qk_head_dim = d_nope + d_rope
        self.softmax_scale = self.qk_head_dim ** -0.5
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * self.qk_head_dim, bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        # cos/sin tables by position, float64, moved/cast on use
        self.cos_table, self.sin_table = precompute_rope(d_rope, 4096, rope_base)

    def rotary(self, x, start_pos):
        # x (B, T, ..., d_rope) with the position on dim 1
        seqlen, half = x.shape[1], x.shape[-1] // 2
        if start_pos + seqlen > self.cos_table.shape[0]:
            self.cos_table, self.sin_table = precompute_rope(x.shape[-1], 2 * (start_pos + seqlen), self.rope_base)
        ct = torch.promote_types(x.dtype, torch.float32)
        shape = (seqlen,) + (1,) * (x.dim() - 3) + (half,)
        cos = self.cos_table[start_pos:start_pos + seqlen].to(device=x.device, dtype=ct).view(shape)
        sin = self.sin_table[start_pos:start_pos + seqlen].to(device=x.device, dtype=ct).view(shape)
        x1, x2 = x.to(ct).chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].shape[1]

        q = self.W_q(x).view(bsz, seqlen, self.n_heads, self.qk_head_dim)
        q_nope, q_pe = torch.split(q, [self.d_nope, self.d_rope], dim=-1)
        q_pe = self.rotary(q_pe, start_pos)

        kv = self.W_kv_a(x)
        c_kv, k_pe = torch.split(kv, [self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = self.rotary(k_pe, start_pos)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        end_pos = c_kv.shape[1]

        wkv_b = self.W_kv_b.weight.view(self.n_heads, self.d_nope + self.d_v, self.kv_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :self.d_nope])
        scores = (torch.einsum("bshc,btc->bsht", q_nope, c_kv) +
                  torch.einsum("bshr,btr->bsht", q_pe, k_pe)) * self.softmax_scale
        mask = torch.full((seqlen, end_pos), float("-inf"), dtype=scores.dtype, device=x.device).triu_(start_pos + 1)
        scores = scores + mask.unsqueeze(1)
        scores = scores.softmax(dim=-1)

        o = torch.einsum("bsht,btc->bshc", scores, c_kv)
        o = torch.einsum("bshc,hdc->bshd", o, wkv_b[:, -self.d_v:])
        out = self.W_o(o.flatten(2))
        return out, (c_kv, k_pe)
