"""Mistake: keyword call with query=memory and key=value=x, the roles of the two sequences reversed."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.H = num_heads
        self.dh = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _to_heads(self, t):
        B, T, _ = t.shape
        return t.reshape(B, T, self.H, self.dh).permute(0, 2, 1, 3).reshape(B * self.H, T, self.dh)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        q, k, v = self._to_heads(self.W_q(query)), self._to_heads(self.W_k(key)), self._to_heads(self.W_v(value))
        s = torch.baddbmm(torch.zeros(B * self.H, Tq, Tk, dtype=q.dtype, device=q.device),
                          q, k.transpose(1, 2), alpha=self.dh ** -0.5)
        if mask is not None:
            m = mask.expand(B, Tq, Tk).repeat_interleave(self.H, dim=0)
            s = s.masked_fill(~m, float("-inf"))
        p = torch.softmax(s, dim=-1)
        o = torch.bmm(p, v).reshape(B, self.H, Tq, self.dh).permute(0, 2, 1, 3).reshape(B, Tq, D)
        return self.W_o(o), p.view(B, self.H, Tq, Tk)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)

    def _sublayer(self, x, norm, fn):
        return x + fn(norm(x)) if self.norm_first else norm(x + fn(x))

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        Tq = x.shape[-2]
        i = torch.arange(Tq, device=x.device)
        future_hidden = (i[None, :] <= i[:, None]).unsqueeze(0)
        tgt = future_hidden if tgt_mask is None else torch.logical_and(future_hidden, tgt_mask)
        x = self._sublayer(x, self.norm1, lambda h: self.self_attn(h, h, h, mask=tgt)[0])
        x = self._sublayer(x, self.norm2, lambda h: self.cross_attn(query=memory, key=h, value=h, mask=memory_mask)[0])
        x = self._sublayer(x, self.norm3, lambda h: self.ff2(F.relu(self.ff1(h))))
        return x
