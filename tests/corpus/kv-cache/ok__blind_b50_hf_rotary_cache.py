import torch
from torch import nn
import torch.nn.functional as F


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


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
        self.num_key_value_groups = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.scaling = self.head_dim ** -0.5
        self.rope_theta = rope_base
        self.W_q = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(num_heads * self.head_dim, d_model, bias=False)

    def _cos_sin(self, position_ids, like):
        dtype = torch.promote_types(like.dtype, torch.float32)
        inv_freq = 1.0 / (self.rope_theta ** (torch.arange(0, self.head_dim, 2, device=like.device, dtype=dtype) / self.head_dim))
        freqs = torch.outer(position_ids.to(dtype), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(like.dtype), emb.sin().to(like.dtype)

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.size()
        past_len = 0 if cache is None else cache[0].shape[-2]
        query_states = self.W_q(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.W_k(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.W_v(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)

        position_ids = torch.arange(past_len, past_len + q_len, device=x.device)
        cos, sin = self._cos_sin(position_ids, x)
        query_states = query_states * cos + rotate_half(query_states) * sin
        key_states = key_states * cos + rotate_half(key_states) * sin

        if cache is not None:
            key_states = torch.cat([cache[0], key_states], dim=-2)
            value_states = torch.cat([cache[1], value_states], dim=-2)
        present = (key_states, value_states)
        kv_len = key_states.shape[-2]

        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        causal_mask = torch.full((q_len, kv_len), float("-inf"), device=x.device, dtype=attn_weights.dtype)
        causal_mask = torch.triu(causal_mask, diagonal=past_len + 1)
        attn_weights = attn_weights + causal_mask
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, -1)
        return self.W_o(attn_output), present
