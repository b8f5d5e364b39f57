"""The layer is right; its MultiHeadAttention (from the mha corpus) loops over heads and copies each into a
torch.zeros(...) weights buffer made without device=. On the meta device that copy raises and the checker warns;
the layer never returns the buffer, so on a GPU it runs (a copy to the CPU per head) and the GPU's run settles it."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H = self.num_heads
        d = D // H
        q, k, v = self.W_q(query), self.W_k(key), self.W_v(value)
        weights = torch.zeros(B, H, Tq, Tk, dtype=query.dtype)
        heads = []
        for h in range(H):
            cols = slice(h * d, (h + 1) * d)
            s = q[..., cols] @ k[..., cols].transpose(1, 2) / math.sqrt(d)  # (B, Tq, Tk)
            if mask is not None:
                s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
            w = torch.softmax(s, dim=-1)
            weights[:, h] = w
            heads.append(w @ v[..., cols])
        return self.W_o(torch.cat(heads, dim=-1)), weights


import torch  # noqa: E402 (the layer's)
from torch import nn  # noqa: E402


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
        T = x.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril().unsqueeze(0)  # (1, T, T)
        self_mask = causal if tgt_mask is None else causal & tgt_mask
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, self_mask)[0]
            h = self.norm2(x)
            x = x + self.cross_attn(h, memory, memory, memory_mask)[0]
            x = x + self.ff2(torch.relu(self.ff1(self.norm3(x))))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, self_mask)[0])
            x = self.norm2(x + self.cross_attn(x, memory, memory, memory_mask)[0])
            x = self.norm3(x + self.ff2(torch.relu(self.ff1(x))))
        return x
