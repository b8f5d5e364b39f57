import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_rank
        self.qk_nope_head_dim = d_nope
        self.qk_rope_head_dim = d_rope
        self.v_head_dim = d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def _cos_sin(self, start, length, like):
        dt = torch.promote_types(like.dtype, torch.float32)
        d = self.qk_rope_head_dim
        inv_freq = 1.0 / (self.rope_base ** (torch.arange(0, d, 2, dtype=dt, device=like.device) / d))
        t = torch.arange(start, start + length, dtype=dt, device=like.device)
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(like.dtype), emb.sin().to(like.dtype)

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.shape
        past_len = 0 if cache is None else cache[0].shape[1]
        cos, sin = self._cos_sin(past_len, q_len, x)

        q = self.W_q(x).view(bsz, q_len, self.n_heads, -1).transpose(1, 2)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = q_pe * cos + rotate_half(q_pe) * sin

        compressed_kv = self.W_kv_a(x)
        compressed_kv, k_pe = torch.split(compressed_kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pe = k_pe * cos + rotate_half(k_pe) * sin
        if cache is not None:
            compressed_kv = torch.cat([cache[0], compressed_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        kv_len = compressed_kv.shape[1]

        kv = self.W_kv_b(self.kv_norm(compressed_kv))  # MISTAKE
        kv = kv.view(bsz, kv_len, self.n_heads, -1).transpose(1, 2)
        k_nope, value_states = torch.split(kv, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)

        query_states = torch.cat([q_nope, q_pe], dim=-1)
        key_states = torch.cat([k_nope, k_pe[:, None].expand(-1, self.n_heads, -1, -1)], dim=-1)
        attn_weights = query_states @ key_states.transpose(2, 3) / math.sqrt(query_states.shape[-1])
        causal = torch.ones(q_len, kv_len, dtype=torch.bool, device=x.device).tril(kv_len - q_len)
        attn_weights = attn_weights.masked_fill(~causal, torch.finfo(attn_weights.dtype).min)
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_output = (attn_weights @ value_states).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.W_o(attn_output), (compressed_kv, k_pe)
