import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.variance_epsilon = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        h = hidden_states.to(torch.float32) if input_dtype in (torch.float16, torch.bfloat16) else hidden_states
        variance = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * h.to(input_dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_lora_rank = kv_rank
        self.qk_nope_head_dim = d_nope
        self.qk_rope_head_dim = d_rope
        self.q_head_dim = d_nope + d_rope
        self.v_head_dim = d_v
        self.rope_theta = rope_base
        self.W_q = nn.Linear(d_model, num_heads * self.q_head_dim, bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.softmax_scale = self.q_head_dim ** (-0.5)

    def rotary(self, position_ids, dtype):
        # position_ids (B, T) -> cos, sin (B, T, d_rope)
        f = torch.float64 if dtype == torch.float64 else torch.float32
        inv_freq = 1.0 / (self.rope_theta ** (torch.arange(0, self.qk_rope_head_dim, 2, device=position_ids.device,
                                                           dtype=f) / self.qk_rope_head_dim))
        freqs = position_ids[..., None].to(f) * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.size()
        position_ids = torch.arange(q_len, device=x.device).unsqueeze(0).expand(bsz, -1)  # MISTAKE

        q = self.W_q(x).view(bsz, q_len, self.num_heads, self.q_head_dim).transpose(1, 2)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        compressed_kv = self.W_kv_a(x)
        compressed_kv, k_pe = torch.split(compressed_kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        compressed_kv = self.kv_norm(compressed_kv)

        cos, sin = self.rotary(position_ids, x.dtype)
        q_pe = q_pe * cos.unsqueeze(1) + rotate_half(q_pe) * sin.unsqueeze(1)
        k_pe = k_pe * cos + rotate_half(k_pe) * sin

        if cache is not None:
            compressed_kv = torch.cat([cache[0], compressed_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        kv_seq_len = compressed_kv.shape[1]

        kv = self.W_kv_b(compressed_kv).view(bsz, kv_seq_len, self.num_heads, -1).transpose(1, 2)
        k_nope, value_states = torch.split(kv, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)
        query_states = torch.cat([q_nope, q_pe], dim=-1)
        key_states = torch.cat([k_nope, k_pe.unsqueeze(1).expand(-1, self.num_heads, -1, -1)], dim=-1)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.softmax_scale
        causal_mask = torch.full((q_len, kv_seq_len), torch.finfo(attn_weights.dtype).min, device=x.device,
                                 dtype=attn_weights.dtype).triu(kv_seq_len - q_len + 1)
        attn_weights = F.softmax(attn_weights + causal_mask, dim=-1)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, self.num_heads * self.v_head_dim)
        return self.W_o(attn_output), (compressed_kv, k_pe)
