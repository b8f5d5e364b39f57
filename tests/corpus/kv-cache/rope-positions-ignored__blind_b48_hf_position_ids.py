import math

import torch
import torch.nn.functional as F
from torch import nn


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.rope_theta = rope_base
        self.W_q = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(num_heads * self.head_dim, d_model, bias=False)

    def rotary_emb(self, position_ids, dtype):
        inv_freq = 1.0 / (self.rope_theta ** (torch.arange(0, self.head_dim, 2, device=position_ids.device).float() / self.head_dim))
        freqs = position_ids[:, None].float() * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def forward(self, x, cache=None):
        bsz, q_len, hidden = x.size()
        query_states = self.W_q(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.W_k(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.W_v(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)

        past_len = 0 if cache is None else cache[0].shape[-2]
        position_ids = torch.arange(q_len, device=x.device)  # MISTAKE: must start at past_len when a cache is given
        cos, sin = self.rotary_emb(position_ids, query_states.dtype)
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)

        if cache is not None:
            key_states = torch.cat([cache[0], key_states], dim=-2)
            value_states = torch.cat([cache[1], value_states], dim=-2)
        present = (key_states, value_states)
        kv_len = key_states.shape[-2]

        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        causal_mask = torch.ones(q_len, kv_len, dtype=torch.bool, device=x.device).tril(diagonal=past_len)
        attn_weights = attn_weights.masked_fill(~causal_mask, float("-inf"))
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(bsz, q_len, hidden)
        return self.W_o(attn_output), present
