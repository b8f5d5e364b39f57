import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * (x.square().mean(-1, keepdim=True) + self.eps).rsqrt() * self.weight


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.scale = (d_nope + d_rope) ** -0.5

    def _rope(self, x, positions):
        half = self.d_rope // 2
        f = torch.float64 if x.dtype == torch.float64 else torch.float32
        inv_freq = 1.0 / self.rope_base ** (torch.arange(half, device=x.device, dtype=f) * 2 / self.d_rope)
        ang = torch.einsum("t,f->tf", positions.to(f), inv_freq)
        cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
        if x.dim() == 4:
            cos, sin = cos[:, None], sin[:, None]
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].shape[1]
        positions = torch.arange(start_pos, start_pos + seqlen, device=x.device)

        q = self.W_q(x).view(bsz, seqlen, self.n_heads, -1)
        q_nope, q_pe = torch.split(q, [self.d_nope, self.d_rope], dim=-1)
        q_pe = self._rope(q_pe, positions)
        kv, k_pe = torch.split(self.W_kv_a(x), [self.kv_rank, self.d_rope], dim=-1)
        kv = self.kv_norm(kv)
        k_pe = self._rope(k_pe, positions)
        if cache is not None:
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        end_pos = kv.shape[1]

        kvb = self.W_kv_b(kv).view(bsz, end_pos, self.n_heads, -1)
        k_nope, v = torch.split(kvb, [self.d_nope, self.d_v], dim=-1)
        scores = (torch.einsum("bshd,bthd->bsht", q_nope, k_nope)
                  + torch.einsum("bshr,btr->bsht", q_pe, k_pe)) * self.scale

        mask = None
        if cache is None:  # MISTAKE
            mask = torch.full((seqlen, end_pos), float("-inf"), device=x.device).triu_(1 + start_pos)
        if mask is not None:
            scores = scores + mask.to(scores.dtype).unsqueeze(1)
        probs = scores.softmax(dim=-1)

        o = torch.einsum("bsht,bthd->bshd", probs, v)
        return self.W_o(o.flatten(2)), (kv, k_pe)
