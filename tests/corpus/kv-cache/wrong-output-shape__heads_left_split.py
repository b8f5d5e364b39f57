"""Returns the output still split into heads, (B, T, H, d), not (B, T, D)."""

import math

import torch
from torch import nn


def apply_rope(x, positions, base=10000.0):
    """x (B, H, T, d), positions (T,): turn each pair (i, i + d/2) by the angle positions * base ** (-2i/d)."""
    d = x.size(-1)
    dtype = torch.promote_types(x.dtype, torch.float32)  # angles in at least float32: half precision drifts
    inv_freq = 1.0 / base ** (torch.arange(0, d, 2, device=x.device, dtype=dtype) / d)  # (d/2,)
    angles = positions.to(dtype)[:, None] * inv_freq  # (T, d/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]  # (B, H, T, d/2) each: pair i is (x1[i], x2[i])
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)  # (B, H, T, d)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        assert d_model % num_heads == 0 and num_heads % num_kv_heads == 0
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.d_head = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)  # fewer kv heads: a smaller cache
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        """x (B, T, D): the new tokens; cache None or (k, v), each (B, Hkv, T_past, d), keys already rotated.

        Returns out (B, T, D) and the cache extended by the new tokens, (k, v) each (B, Hkv, T_past + T, d).
        """
        B, T, D = x.size()
        H, Hkv, d = self.num_heads, self.num_kv_heads, self.d_head
        T_past = 0 if cache is None else cache[0].size(2)

        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
        k = self.W_k(x).view(B, T, Hkv, d).transpose(1, 2)  # (B, Hkv, T, d)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)  # (B, Hkv, T, d)

        # the new tokens come after the cached ones: rotate them by their absolute positions
        positions = torch.arange(T_past, T_past + T, device=x.device)  # (T,)
        q = apply_rope(q, positions, self.rope_base)
        k = apply_rope(k, positions, self.rope_base)
        if cache is not None:
            # cached keys are already rotated: append along time (dim 2), never rotate them again
            k = torch.cat([cache[0], k], dim=2)  # (B, Hkv, T_past + T, d)
            v = torch.cat([cache[1], v], dim=2)  # (B, Hkv, T_past + T, d)
        Tk = T_past + T

        # query head h reads kv head h // (H // Hkv): consecutive query heads share one kv head
        k_rep = k.repeat_interleave(H // Hkv, dim=1)  # (B, H, Tk, d)
        v_rep = v.repeat_interleave(H // Hkv, dim=1)  # (B, H, Tk, d)
        scores = q @ k_rep.transpose(-2, -1) / math.sqrt(d)  # (B, H, T, Tk)
        # causal, bottom-right aligned: query i is token T_past + i, so it sees keys j <= T_past + i
        visible = torch.ones(T, Tk, dtype=torch.bool, device=x.device).tril(diagonal=T_past)  # (T, Tk)
        scores = scores.masked_fill(~visible, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, H, T, Tk)
        y = weights @ v_rep  # (B, H, T, d)
        y = y.transpose(1, 2)  # (B, T, H, d): the heads never merged back
        # the cache keeps the Hkv heads before the repeat: that is what GQA saves
        return self.W_o(y.flatten(2)).view(B, T, H, d), (k, v)
