"""Known mistakes of the fused, grouped-query and single-head modules, as executable variants
(see variants/attention.py).

Default knobs give the reference's answer (tests/test_reference_mha_fused.py and test_reference_gqa.py prove it);
`qkv_split` and `kv_repeat` reproduce the two mistakes of their own, the other knobs the attention ones.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from attn_drill.judge.variants.attention import (RIGHT, Knobs, attend_and_merge, attention, linear, repeat_kv,
    split_heads)


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
    return attend_and_merge(params, q, k, v, mask, knobs)


def fused_qk(params: dict, H: int, x):
    """The per-head q and k the reference computes, (B, H, T, d) each."""
    q, k, _ = split_qkv(linear(x, params, "W_qkv"), H)
    return split_heads(q, H), split_heads(k, H)


def gqa(params: dict, H: int, Hkv: int, x, mask=None, knobs: Knobs = RIGHT):
    """GroupedQueryAttention from a state dict {W_q.weight, W_k.weight, ...}, with one mistake per knob."""
    q, k, v = gqa_qkv(params, H, Hkv, x, knobs)
    if mask is not None and knobs.head_axis == "kv":
        # a (B, T, T) mask given one axis and broadcast against grouped scores (B, Hkv, g, T, T): B lines up with
        # Hkv, so head h of every sequence reads batch h // g's mask (and it raises unless B == Hkv)
        if mask.size(0) != Hkv:
            raise RuntimeError(f"a mask of batch {mask.size(0)} cannot broadcast against {Hkv} kv heads")
        mask = mask.repeat_interleave(H // Hkv, dim=0).unsqueeze(0)  # (1, H, Tq or 1, Tk)
        knobs = replace(knobs, head_axis=False)  # the mask has its head axis now
    return attend_and_merge(params, q, k, v, mask, knobs)


def gqa_project(params: dict, H: int, Hkv: int, x, split: str = "ok") -> tuple:
    """q (B, H, T, d), and k, v (B, Hkv, T, d): the heads before any repeat (kv-cache turns and caches these)."""
    q = split_heads(linear(x, params, "W_q"), H, split)
    k = split_heads(linear(x, params, "W_k"), Hkv, split)
    v = split_heads(linear(x, params, "W_v"), Hkv, split)
    return q, k, v


def gqa_qkv(params: dict, H: int, Hkv: int, x, knobs: Knobs = RIGHT):
    """q (B, H, T, d), and k, v already repeated to H heads."""
    q, k, v = gqa_project(params, H, Hkv, x, knobs.split)
    groups = H // Hkv
    return q, repeat_kv(k, groups, knobs.kv_repeat), repeat_kv(v, groups, knobs.kv_repeat)


def single_head(params: dict, x, mask=None, knobs: Knobs = RIGHT):
    """SelfAttention (one head, no W_o) from a state dict {W_q.weight, ...}: q, k (B, T, dk), v (B, T, dv); the
    mask (B, T or 1, T) lines up with the (B, T, T) scores as it is."""
    q, k, v = (linear(x, params, n) for n in ("W_q", "W_k", "W_v"))
    return attention(q, k, v, mask, knobs)
