import math

import torch
import torch.nn as nn


def attention(query, key, value, mask=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -torch.inf)
    p_attn = scores.softmax(dim=-1)
    if mask is not None:
        p_attn = p_attn.masked_fill(mask.sum(-1, keepdim=True) == 0, 0.0)
    return torch.matmul(p_attn, value), p_attn


def subsequent_mask(size, device):
    """True where position i may look at position j."""
    rows = torch.arange(size, device=device).unsqueeze(1)
    cols = torch.arange(size, device=device).unsqueeze(0)
    return (rows > cols).unsqueeze(0)  # MISTAKE: strict comparison, each token cannot see itself


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        assert d_model % num_heads == 0
        self.d_k = d_model // num_heads
        self.h = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)
        nbatches = query.size(0)
        query = self.W_q(query).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
        key = self.W_k(key).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
        value = self.W_v(value).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
        x, attn = attention(query, key, value, mask=mask)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.W_o(x), attn


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        m = memory
        causal = subsequent_mask(x.size(1), x.device)
        self_mask = causal if tgt_mask is None else causal & tgt_mask
        sublayers = [
            (self.norm1, lambda y: self.self_attn(y, y, y, self_mask)[0]),
            (self.norm2, lambda y: self.cross_attn(y, m, m, memory_mask)[0]),
            (self.norm3, lambda y: self.ff2(self.ff1(y).relu())),
        ]
        for norm, layer in sublayers:
            if self.norm_first:
                x = x + layer(norm(x))
            else:
                x = norm(x + layer(x))
        return x
