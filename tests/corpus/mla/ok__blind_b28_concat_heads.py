import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        # Meta-style: compute in (at least) fp32, cast back, then scale
        compute = torch.float64 if x.dtype == torch.float64 else torch.float32
        return self._norm(x.to(compute)).type_as(x) * self.weight


class MultiHeadLatentAttention(nn.Module):
    """MLA written the textbook way: rebuild full q/k heads [nope | rope] and run plain attention."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        assert d_rope % 2 == 0
        self.H = num_heads
        self.kv_rank = kv_rank
        self.d_nope = d_nope
        self.d_rope = d_rope
        self.d_v = d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def rope(self, x, pos):
        d = x.shape[-1]
        f = torch.float64 if x.dtype == torch.float64 else torch.float32
        inv_freq = 1.0 / (self.base ** (torch.arange(0, d, 2, device=x.device).to(f) / d))
        emb = torch.outer(pos.to(f), inv_freq).repeat(1, 2)      # (T, d)
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        rotated = torch.cat((-x2, x1), dim=-1)
        return x * emb.cos().to(x.dtype) + rotated * emb.sin().to(x.dtype)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        past_len = cache[1].shape[1] if cache is not None else 0
        pos = torch.arange(T, device=x.device) + past_len

        q = self.W_q(x).view(B, T, self.H, -1).transpose(1, 2)      # (B, H, T, dn+dr)
        q = torch.cat([q[..., : self.d_nope], self.rope(q[..., self.d_nope:], pos)], dim=-1)

        c_kv, k_pe = torch.split(self.W_kv_a(x), [self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = self.rope(k_pe, pos)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).view(B, S, self.H, -1).transpose(1, 2)  # (B, H, S, dn+dv)
        k_nope, v = kv.split([self.d_nope, self.d_v], dim=-1)
        k = torch.cat([k_nope, k_pe.unsqueeze(1).expand(B, self.H, S, self.d_rope)], dim=-1)

        scores = q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5)
        ok = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=S - T)
        neg = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype, device=x.device)
        bias = torch.where(ok, 0.0, neg)
        scores = scores + bias
        probs = torch.exp(scores - torch.logsumexp(scores, dim=-1, keepdim=True))
        out = (probs @ v).transpose(1, 2).flatten(2)
        return self.W_o(out), (c_kv, k_pe)
