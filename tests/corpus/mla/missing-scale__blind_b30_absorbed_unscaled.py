import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def apply_rotary(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    """Inference-style MLA: the up-projection is absorbed, attention runs over the latent."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_rank
        self.qk_nope_head_dim = d_nope
        self.qk_rope_head_dim = d_rope
        self.v_head_dim = d_v
        self.rope_theta = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].size(1)
        end_pos = start_pos + seqlen

        work = torch.float64 if x.dtype == torch.float64 else torch.float32
        freqs = 1.0 / (self.rope_theta ** (
            torch.arange(0, self.qk_rope_head_dim, 2, device=x.device, dtype=work) / self.qk_rope_head_dim))
        angles = torch.outer(torch.arange(start_pos, end_pos, device=x.device, dtype=work), freqs)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)

        q = self.W_q(x).view(bsz, seqlen, self.n_heads, -1)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary(q_pe, cos[:, None], sin[:, None])

        kv, k_pe = torch.split(self.W_kv_a(x), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        kv = self.kv_norm(kv)
        k_pe = apply_rotary(k_pe, cos, sin)
        kv_cache = kv if cache is None else torch.cat([cache[0], kv], dim=1)
        pe_cache = k_pe if cache is None else torch.cat([cache[1], k_pe], dim=1)

        wkv_b = self.W_kv_b.weight.view(self.n_heads, -1, self.kv_lora_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, : self.qk_nope_head_dim])
        scores = torch.einsum("bshc,btc->bsht", q_nope, kv_cache) + torch.einsum("bshr,btr->bsht", q_pe, pe_cache)  # MISTAKE

        mask = torch.full((seqlen, end_pos), float("-inf"), device=x.device).triu_(start_pos + 1)
        scores = scores + mask.to(scores.dtype).unsqueeze(1)
        scores = scores.softmax(dim=-1)

        out = torch.einsum("bsht,btc->bshc", scores, kv_cache)
        out = torch.einsum("bshc,hdc->bshd", out, wkv_b[:, -self.v_head_dim:])
        return self.W_o(out.flatten(2)), (kv_cache, pe_cache)
