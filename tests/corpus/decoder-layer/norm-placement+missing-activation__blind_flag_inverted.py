"""The norm_first flag is read backwards (pre-LN when False, post-LN when True), and the feed-forward has no ReLU between ff1 and ff2."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H, dh = self.num_heads, self.d_head
        heads = []
        all_w = []
        Q, K, V = self.W_q(query), self.W_k(key), self.W_v(value)
        for h in range(H):
            sl = slice(h * dh, (h + 1) * dh)
            s = Q[..., sl] @ K[..., sl].transpose(1, 2) / math.sqrt(dh)  # (B, Tq, Tk)
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            w = torch.softmax(s, dim=-1)
            heads.append(w @ V[..., sl])
            all_w.append(w)
        out = torch.cat(heads, dim=-1)
        return self.W_o(out), torch.stack(all_w, dim=1)


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
        Tq = x.shape[1]
        causal = torch.ones(Tq, Tq, device=x.device, dtype=torch.bool).tril()[None]
        sa_mask = causal & tgt_mask if tgt_mask is not None else causal

        def sa(t):
            return self.self_attn(t, t, t, sa_mask)[0]

        def ca(t):
            return self.cross_attn(t, memory, memory, memory_mask)[0]

        def ff(t):
            return self.ff2(self.ff1(t))

        if not self.norm_first:
            x = x + sa(self.norm1(x))
            x = x + ca(self.norm2(x))
            x = x + ff(self.norm3(x))
        else:
            x = self.norm1(x + sa(x))
            x = self.norm2(x + ca(x))
            x = self.norm3(x + ff(x))
        return x
