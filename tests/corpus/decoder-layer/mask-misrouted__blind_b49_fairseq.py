import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        bsz, tgt_len, embed_dim = query.shape
        src_len = key.shape[1]
        H, hd = self.num_heads, self.head_dim
        q = self.W_q(query).reshape(bsz, tgt_len, H, hd)
        k = self.W_k(key).reshape(bsz, src_len, H, hd)
        v = self.W_v(value).reshape(bsz, src_len, H, hd)
        attn_weights = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(hd)
        if mask is not None:
            m = mask[:, None]  # (B or 1, 1, Tq or 1, Tk)
            attn_weights = attn_weights.masked_fill(~m, float("-inf"))
        attn_probs = torch.softmax(attn_weights, dim=-1)
        if mask is not None:
            attn_probs = torch.where(m.any(-1, keepdim=True), attn_probs, torch.zeros_like(attn_probs))
        attn = torch.einsum("bhts,bshd->bthd", attn_probs, v).reshape(bsz, tgt_len, embed_dim)
        return self.W_o(attn), attn_probs


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.normalize_before = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)

    def maybe_layer_norm(self, norm, x, before):
        return norm(x) if before == self.normalize_before else x

    def buffered_future_mask(self, x, tgt_mask):
        n = x.size(1)
        future = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=1)
        allowed = ~future[None]
        if tgt_mask is not None:
            allowed = allowed & tgt_mask
        return allowed

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        self_attn_mask = self.buffered_future_mask(x, tgt_mask)
        encoder_padding_mask = tgt_mask  # MISTAKE: the decoder's own mask handed to encoder-decoder attention

        residual = x
        x = self.maybe_layer_norm(self.norm1, x, before=True)
        x, _ = self.self_attn(x, x, x, mask=self_attn_mask)
        x = residual + x
        x = self.maybe_layer_norm(self.norm1, x, before=False)

        residual = x
        x = self.maybe_layer_norm(self.norm2, x, before=True)
        x, _ = self.cross_attn(x, memory, memory, mask=encoder_padding_mask)
        x = residual + x
        x = self.maybe_layer_norm(self.norm2, x, before=False)

        residual = x
        x = self.maybe_layer_norm(self.norm3, x, before=True)
        x = self.ff2(torch.relu(self.ff1(x)))
        x = residual + x
        x = self.maybe_layer_norm(self.norm3, x, before=False)
        return x
