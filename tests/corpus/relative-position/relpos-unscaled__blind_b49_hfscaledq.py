import math

import torch
from torch import nn


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.max_distance = max_distance
        self.scaling = self.head_dim ** -0.5
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.head_dim)

    def _shape(self, t, bsz, seq_len):
        return t.view(bsz, seq_len, self.num_heads, self.head_dim).permute(0, 2, 1, 3).contiguous()

    def _rel_index(self, seq_len, device):
        ctx = torch.arange(seq_len, dtype=torch.long, device=device)[:, None]
        mem = torch.arange(seq_len, dtype=torch.long, device=device)[None, :]
        rel = torch.clamp(mem - ctx, min=-self.max_distance, max=self.max_distance)
        return rel + self.max_distance

    def forward(self, x, mask=None):
        bsz, seq_len, embed_dim = x.size()
        query_states = self._shape(self.W_q(x), bsz, seq_len)
        key_states = self._shape(self.W_k(x), bsz, seq_len)
        value_states = self._shape(self.W_v(x), bsz, seq_len)

        scaled_query = query_states * self.scaling
        rel_emb = self.rel_k(self._rel_index(seq_len, x.device))  # (T, T, d)

        attn_weights = torch.einsum("bhqd,bhkd->bhqk", scaled_query, key_states)
        rel_logits = torch.einsum("bhqd,qkd->bhqk", query_states, rel_emb)  # MISTAKE: raw query, so the position term escapes the scaling
        attn_weights = attn_weights + rel_logits

        if mask is not None:
            keep = mask[:, None, :, :]
            attn_weights = attn_weights.masked_fill(keep.logical_not(), torch.finfo(attn_weights.dtype).min)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        if mask is not None:
            attn_weights = attn_weights * keep.any(dim=-1, keepdim=True)

        attn_output = torch.einsum("bhqk,bhkd->bhqd", attn_weights, value_states)
        attn_output = attn_output.permute(0, 2, 1, 3).reshape(bsz, seq_len, embed_dim)
        return self.W_o(attn_output), attn_weights
