import math

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.promote_types(input_dtype, torch.float32))
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.eps)
        return self.weight * hidden_states.to(input_dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_lora_rank = kv_rank
        self.qk_nope_head_dim = d_nope
        self.qk_rope_head_dim = d_rope
        self.v_head_dim = d_v
        self.q_head_dim = d_nope + d_rope
        self.rope_theta = rope_base
        self.softmax_scale = self.q_head_dim ** -0.5
        self.W_q = nn.Linear(d_model, num_heads * self.q_head_dim, bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def rotary(self, position_ids, dtype):
        dim = self.qk_rope_head_dim
        inv_freq = 1.0 / (self.rope_theta ** (torch.arange(0, dim, 2, device=position_ids.device).float() / dim))
        freqs = position_ids.float()[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.size()
        past_len = 0 if cache is None else cache[0].shape[1]

        q = self.W_q(x).view(bsz, q_len, self.num_heads, self.q_head_dim).transpose(1, 2)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)

        compressed_kv = self.W_kv_a(x)
        compressed_kv, k_pe = torch.split(compressed_kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        compressed_kv = self.kv_norm(compressed_kv)

        position_ids = torch.arange(past_len, past_len + q_len, device=x.device)
        cos, sin = self.rotary(position_ids, x.dtype)
        q_pe = q_pe * cos + rotate_half(q_pe) * sin
        k_pe = k_pe * cos + rotate_half(k_pe) * sin

        if cache is not None:
            compressed_kv = torch.cat([cache[0], compressed_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        kv_seq_len = compressed_kv.shape[1]

        kv = self.W_kv_b(compressed_kv).view(bsz, kv_seq_len, self.num_heads, self.qk_nope_head_dim + self.v_head_dim)
        kv = kv.transpose(1, 2)
        k_nope, value_states = torch.split(kv, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)

        query_states = torch.cat([q_nope, q_pe], dim=-1)
        key_states = torch.cat([k_nope, k_pe[:, None].expand(-1, self.num_heads, -1, -1)], dim=-1)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.softmax_scale
        causal = torch.full((q_len, kv_seq_len), float("-inf"), dtype=attn_weights.dtype, device=x.device).triu(1)  # MISTAKE: top-left, should be triu(past_len + 1)
        attn_weights = attn_weights + causal
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, self.num_heads * self.v_head_dim)
        return self.W_o(attn_output), (compressed_kv, k_pe)
