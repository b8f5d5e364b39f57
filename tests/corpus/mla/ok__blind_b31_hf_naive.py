import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        in_dtype = x.dtype
        h = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (h * self.weight.to(h.dtype)).to(in_dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    """DeepSeek-V2 style MLA, naive form: rebuild per-head keys and values."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.q_head_dim = d_nope + d_rope
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * self.q_head_dim, bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.softmax_scale = self.q_head_dim ** -0.5

    def _cos_sin(self, positions, dtype):
        calc = torch.float64 if dtype == torch.float64 else torch.float32
        inv_freq = 1.0 / (self.rope_base ** (
            torch.arange(0, self.d_rope, 2, device=positions.device, dtype=calc) / self.d_rope))
        freqs = positions.to(calc)[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.shape
        past = 0 if cache is None else cache[0].shape[1]

        q = self.W_q(x).view(bsz, q_len, self.num_heads, self.q_head_dim).transpose(1, 2)
        q_nope, q_pe = torch.split(q, [self.d_nope, self.d_rope], dim=-1)

        compressed = self.W_kv_a(x)
        c_kv, k_pe = torch.split(compressed, [self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)

        positions = torch.arange(past, past + q_len, device=x.device)
        cos, sin = self._cos_sin(positions, x.dtype)
        q_pe = q_pe * cos + rotate_half(q_pe) * sin
        k_pe = k_pe * cos + rotate_half(k_pe) * sin

        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        kv_len = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).view(bsz, kv_len, self.num_heads, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, value_states = torch.split(kv, [self.d_nope, self.d_v], dim=-1)

        query_states = torch.cat([q_nope, q_pe], dim=-1)
        key_states = torch.cat([k_nope, k_pe[:, None].expand(-1, self.num_heads, -1, -1)], dim=-1)

        attn = torch.matmul(query_states, key_states.transpose(2, 3)) * self.softmax_scale
        causal = torch.full((q_len, kv_len), float("-inf"), device=x.device, dtype=attn.dtype)
        causal = causal.triu(diagonal=past + 1)
        attn = F.softmax(attn + causal, dim=-1)

        out = torch.matmul(attn, value_states)
        out = out.transpose(1, 2).reshape(bsz, q_len, self.num_heads * self.d_v)
        return self.W_o(out), (c_kv, k_pe)
