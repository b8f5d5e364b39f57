"""A LLaMA-style Transformer block: a model answer.

Pre-norm with RMSNorm, causal self-attention with RoPE and grouped kv heads, then a SwiGLU feed-forward, each
sub-layer added back to the residual stream. This is the block of LLaMA 2/3, Mistral and Qwen, one of each.
"""

import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    """x / rms(x) * weight: LayerNorm without the mean subtraction and without the bias."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        # in float32 at least, as Meta's code does: a mean of squares in half precision loses digits
        xf = x.to(torch.promote_types(x.dtype, torch.float32))
        # eps inside the square root: it keeps a near-zero vector from dividing by ~0
        normed = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return normed.to(x.dtype) * self.weight


class SwiGLU(nn.Module):
    """w2(silu(w1(x)) * w3(x)): a gated feed-forward, w1 the gate, w3 the up projection, w2 the down one."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)  # gate
        self.w3 = nn.Linear(dim, hidden, bias=False)  # up
        self.w2 = nn.Linear(hidden, dim, bias=False)  # down

    def forward(self, x):
        return self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))  # the gate decides what of w3(x) passes


def apply_rope(x, positions, base):
    """x (B, H, T, d); positions (T,) or (B, T): turn each pair (i, i + d/2) by positions * base ** (-2i/d)."""
    d = x.size(-1)
    dtype = torch.promote_types(x.dtype, torch.float32)  # angles in at least float32
    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=dtype) / d)  # (d/2,)
    theta = positions.to(dtype)[..., None] * inv_freq  # (T, d/2) or (B, T, d/2)
    if theta.dim() == 3:
        theta = theta[:, None]  # (B, 1, T, d/2): a sequence's angles are shared by all its heads
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]  # pair i is (x1[..., i], x2[..., i])
    rotated = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)  # (B, H, T, d)
    return rotated


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        assert d_model % num_heads == 0 and num_heads % num_kv_heads == 0
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.d_head = d_model // num_heads
        self.rope_base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)  # fewer kv heads: a smaller cache
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def attention(self, x, positions):
        B, T, D = x.size()
        H, Hkv, d = self.num_heads, self.num_kv_heads, self.d_head
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
        k = self.W_k(x).view(B, T, Hkv, d).transpose(1, 2)  # (B, Hkv, T, d)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)  # (B, Hkv, T, d)
        q = apply_rope(q, positions, self.rope_base)  # positions only turn q and k; the values carry no position
        k = apply_rope(k, positions, self.rope_base)
        # query head h reads kv head h // (H // Hkv): consecutive query heads share one kv head
        k = k.repeat_interleave(H // Hkv, dim=1)  # (B, H, T, d)
        v = v.repeat_interleave(H // Hkv, dim=1)  # (B, H, T, d)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, H, T, T)
        # causal by index: token i sees tokens j <= i, whatever positions RoPE was given
        visible = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()  # (T, T)
        scores = scores.masked_fill(~visible, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, H, T, T)
        y = (weights @ v).transpose(1, 2).reshape(B, T, D)  # (B, T, H, d) -> (B, T, D)
        return self.W_o(y)

    def forward(self, x, positions=None):
        """x (B, T, D); positions int64 (T,) or (B, T), 0 .. T-1 when None. Returns (B, T, D)."""
        if positions is None:
            positions = torch.arange(x.size(1), device=x.device)  # (T,)
        h = x + self.attention(self.attn_norm(x), positions)  # pre-norm: the residual stream is never normalised
        return h + self.ffn(self.ffn_norm(h))
