import math

import torch
from torch import nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.promote_types(input_dtype, torch.float32))
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def rotary_cos_sin(position_ids, dim, base, dtype):
    ct = torch.promote_types(dtype, torch.float32)
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=position_ids.device, dtype=ct) / dim))
    freqs = position_ids.to(ct)[..., None] * inv_freq           # (..., T, dim/2)
    emb = torch.cat((freqs, freqs), dim=-1)                      # (..., T, dim)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, None, :, :, :].expand(batch, n_rep, num_key_value_heads, slen, head_dim)  # MISTAKE: rep axis before the kv-head axis tiles the heads
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.rope_theta = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(num_heads * self.head_dim, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def self_attn(self, hidden_states, position_ids):
        bsz, q_len, _ = hidden_states.size()
        q = self.W_q(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k = self.W_k(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        v = self.W_v(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)

        cos, sin = rotary_cos_sin(position_ids, self.head_dim, self.rope_theta, q.dtype)
        if cos.dim() == 3:                        # (B, T, d): one angle table per sequence
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin

        k = repeat_kv(k, self.num_key_value_groups)
        v = repeat_kv(v, self.num_key_value_groups)

        attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        causal = torch.full((q_len, q_len), float("-inf"), device=q.device, dtype=q.dtype).triu(1)
        attn_weights = attn_weights + causal
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, v)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, -1)
        return self.W_o(attn_output)

    def forward(self, x, positions=None):
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)
        residual = x
        h = residual + self.self_attn(self.attn_norm(x), positions)
        return h + self.ffn(self.ffn_norm(h))
