"""Known mistakes of the fused and grouped-query modules, as executable variants (see variants.py).

Default knobs give the reference's answer (tests/test_reference_mha_fused.py and test_reference_gqa.py prove it);
`qkv_split` and `kv_repeat` reproduce the two mistakes of their own, the other knobs the attention ones.
"""

from __future__ import annotations

import torch

from attn_drill.check.variants import RIGHT, Knobs, attention, linear, merge_heads, split_heads


def split_qkv(qkv: torch.Tensor, H: int, how: str = "ok") -> tuple:
    """q, k, v (each (B, T, D)) from W_qkv's output (B, T, 3D)."""
    B, T, D3 = qkv.shape
    D = D3 // 3
    if how == "heads":  # view(B, T, H, 3, d): head h's q, k, v taken side by side, a per-head interleaved layout
        parts = qkv.view(B, T, H, 3, D // H).unbind(3)  # 3 x (B, T, H, d)
        return tuple(p.reshape(B, T, D) for p in parts)
    return qkv.split(D, dim=-1)  # [q | k | v]


def fused(params: dict, H: int, x, mask=None, knobs: Knobs = RIGHT):
    """FusedSelfAttention from a state dict {W_qkv.weight, W_qkv.bias, W_o...}, with one mistake per knob."""
    q, k, v = split_qkv(linear(x, params, "W_qkv"), H, knobs.qkv_split)
    q, k, v = (split_heads(t, H, knobs.split) for t in (q, k, v))  # (B, H, T, d)
    return _attend_and_merge(params, q, k, v, mask, knobs)


def fused_qk(params: dict, H: int, x):
    """The per-head q and k the reference computes, (B, H, T, d) each."""
    q, k, _ = split_qkv(linear(x, params, "W_qkv"), H)
    return split_heads(q, H), split_heads(k, H)


def repeat_kv(t: torch.Tensor, groups: int, how: str = "ok") -> torch.Tensor:
    """(B, Hkv, T, d) -> (B, Hkv * groups, T, d)."""
    if how == "tile":
        return t.repeat(1, groups, 1, 1)  # head h reads kv head h % Hkv
    return t.repeat_interleave(groups, dim=1)  # head h reads kv head h // groups


def gqa(params: dict, H: int, Hkv: int, x, mask=None, knobs: Knobs = RIGHT):
    """GroupedQueryAttention from a state dict {W_q.weight, W_k.weight, ...}, with one mistake per knob."""
    q, k, v = gqa_qkv(params, H, Hkv, x, knobs)
    return _attend_and_merge(params, q, k, v, mask, knobs)


def gqa_qkv(params: dict, H: int, Hkv: int, x, knobs: Knobs = RIGHT):
    """q (B, H, T, d), and k, v already repeated to H heads."""
    q = split_heads(linear(x, params, "W_q"), H, knobs.split)  # (B, H, T, d)
    k = split_heads(linear(x, params, "W_k"), Hkv, knobs.split)  # (B, Hkv, T, d)
    v = split_heads(linear(x, params, "W_v"), Hkv, knobs.split)
    groups = H // Hkv
    return q, repeat_kv(k, groups, knobs.kv_repeat), repeat_kv(v, groups, knobs.kv_repeat)


def _attend_and_merge(params, q, k, v, mask, knobs):
    if mask is not None and knobs.head_axis:
        mask = mask.unsqueeze(1)  # (B, 1, T or 1, T)
    y, weights = attention(q, k, v, mask, knobs)
    y = merge_heads(y, knobs.merge)  # (B, T, D)
    return (linear(y, params, "W_o") if knobs.out_proj else y), weights
