import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(hidden, n_rep):
    b, n_kv, slen, hd = hidden.shape
    if n_rep == 1:
        return hidden
    hidden = hidden[:, :, None, :, :].expand(b, n_kv, n_rep, slen, hd)
    return hidden.reshape(b, n_kv * n_rep, slen, hd)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_theta = rope_base
        self.W_q = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(num_heads * self.head_dim, d_model, bias=False)

    def _rotary(self, position_ids, dtype):
        fdt = torch.float64 if dtype == torch.float64 else torch.float32
        inv_freq = 1.0 / (self.rope_theta ** (
            torch.arange(0, self.head_dim, 2, device=position_ids.device, dtype=fdt) / self.head_dim))
        freqs = position_ids.to(fdt)[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.size()
        past = 0 if cache is None else cache[0].shape[-2]

        query_states = self.W_q(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.W_k(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.W_v(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)

        position_ids = torch.arange(past, past + q_len, device=x.device)
        cos, sin = self._rotary(position_ids, x.dtype)
        query_states = query_states * cos + rotate_half(query_states) * sin
        key_states = key_states * cos + rotate_half(key_states) * sin

        if cache is not None:
            key_states = torch.cat([cache[0], key_states], dim=-2)
            value_states = torch.cat([cache[1], value_states], dim=-2)
        present = (key_states, value_states)
        kv_len = key_states.shape[-2]

        k = repeat_kv(key_states, self.num_key_value_groups)
        v = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, k.transpose(2, 3)) / math.sqrt(self.head_dim)

        q_idx = torch.arange(q_len, device=x.device)[:, None] + past
        k_idx = torch.arange(kv_len, device=x.device)[None, :]
        attn_weights = attn_weights.masked_fill(k_idx > q_idx, torch.finfo(attn_weights.dtype).min)
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, v)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, -1)
        return self.W_o(attn_output), present
