"""Inside MultiHeadAttention: the keys projected by W_q."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        b, tq, dm = query.shape
        tk = key.shape[1]
        nh, hd = self.num_heads, self.head_dim
        q = self.W_q(query).reshape(b, tq, nh, hd).permute(0, 2, 1, 3)
        k = self.W_q(key).reshape(b, tk, nh, hd).permute(0, 2, 1, 3)
        v = self.W_v(value).reshape(b, tk, nh, hd).permute(0, 2, 1, 3)

        logits = torch.einsum("bhqd,bhkd->bhqk", q, k) * hd**-0.5
        if mask is not None:
            m = mask[:, None]
            logits = torch.where(m, logits, float("-inf"))
        probs = F.softmax(logits, dim=-1)
        if mask is not None:
            probs = torch.where(m.any(dim=-1, keepdim=True), probs, 0.0)

        ctx = torch.einsum("bhqk,bhkd->bhqd", probs, v)
        ctx = ctx.permute(0, 2, 1, 3).reshape(b, tq, dm)
        return self.W_o(ctx), probs


class EncoderLayer(nn.Module):
    """The feed-forward as an nn.Sequential over ff1 and ff2, the norms through F.layer_norm."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.ff = nn.Sequential(self.ff1, nn.ReLU(), self.ff2)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    @staticmethod
    def _ln(norm, x):
        return F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)

    def forward(self, x, mask=None):
        if not self.norm_first:
            attn, _ = self.self_attn(x, x, x, mask)
            x = self._ln(self.norm1, x + attn)
            return self._ln(self.norm2, x + self.ff(x))
        h = self._ln(self.norm1, x)
        attn, _ = self.self_attn(h, h, h, mask)
        x = x + attn
        return x + self.ff(self._ln(self.norm2, x))
