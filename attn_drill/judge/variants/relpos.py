"""Known mistakes of relative-position attention (Shaw et al.), as executable variants (see variants/attention.py).

Default knobs give the reference's answer (tests/test_reference_v2_attention.py proves it). The relative-position
knobs reproduce its own mistakes (the offset's direction, far offsets not clipped, the position term left
unscaled); the attention and head knobs apply as in mha.
"""

from __future__ import annotations

import torch

from attn_drill.judge.variants.attention import RIGHT, Knobs, attend_and_merge, linear, split_heads


def offsets(T: int, m: int, knobs: Knobs = RIGHT, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """(index into rel_k (T, T), kept (T, T) bool): which embedding each (query i, key j) reads, and whether
    it gets a position term at all. Raises RuntimeError when the lookup would index past the table."""
    pos = torch.arange(T, device=device)
    off = pos[None, :] - pos[:, None]  # (T, T): [i, j] = j - i
    if knobs.relpos_offset == "i-j":
        off = -off  # a past key read as a future one
    kept = torch.ones(T, T, dtype=torch.bool, device=device)
    if knobs.relpos_far == "clip":
        index = off.clamp(-m, m) + m
    elif knobs.relpos_far == "wrap":
        index = (off + m) % (2 * m + 1)  # far offsets wrap around the table onto near ones
    elif knobs.relpos_far == "drop":
        kept = off.abs() <= m
        index = off.clamp(-m, m) + m  # read, then zeroed: far keys get no position term
    else:  # none: the offsets used as they are
        index = off + m
        if bool((index < 0).any() or (index > 2 * m).any()):
            raise RuntimeError(f"offset {int(off.abs().max())} indexes past a table of {2 * m + 1}")
    return index, kept


def position_scores(q: torch.Tensor, table: torch.Tensor, m: int, knobs: Knobs = RIGHT) -> torch.Tensor:
    """q_i . r_ij for q (B, H, T, d) and rel_k's weight table (2m+1, d): (B, H, T, T)."""
    T = q.size(-2)
    index, kept = offsets(T, m, knobs, q.device)
    r = table[index] * kept[..., None]  # (T, T, d)
    return torch.einsum("bhid,ijd->bhij", q, r)


def relative(params: dict, H: int, m: int, x, mask=None, knobs: Knobs = RIGHT):
    """RelativeSelfAttention from a state dict {W_q.weight, ..., rel_k.weight}, with one mistake per knob."""
    q, k, v = (split_heads(linear(x, params, n), H, knobs.split) for n in ("W_q", "W_k", "W_v"))  # (B, H, T, d)
    bias = position_scores(q, params["rel_k.weight"], m, knobs)  # (B, H, T, T)
    return attend_and_merge(params, q, k, v, mask, knobs, bias)


def relative_qk(params: dict, H: int, m: int, x) -> torch.Tensor:
    """The raw scores q k^T + q r^T before any scale, (B, H, T, T): to fit the user's effective scale."""
    q, k = (split_heads(linear(x, params, n), H) for n in ("W_q", "W_k"))
    return q @ k.transpose(-2, -1) + position_scores(q, params["rel_k.weight"], m)
