"""Correct: one _residual(x, norm, fn) helper handles both placements; bmm attention over B*H."""
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


class EncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def _residual(self, x, norm, fn):
        # one sub-layer with its residual, in either placement
        if self.norm_first:
            return x + fn(norm(x))
        return norm(x + fn(x))

    def forward(self, x, mask=None):
        x = self._residual(x, self.norm1, lambda t: self.self_attn(t, t, t, mask)[0])
        x = self._residual(x, self.norm2, lambda t: self.ff2(F.relu(self.ff1(t))))
        return x
