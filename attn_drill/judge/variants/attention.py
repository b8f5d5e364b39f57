"""Known mistakes as executable variants of attention.

`attention` and `mha` compute the right answer with default knobs; each knob reproduces one real mistake.
A variant that reproduces the user's outputs where the reference does not is strong evidence for that
mistake. tests/test_references.py proves the default knobs equal the references.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Knobs:
    scale: float | str | None = None  # None = 1/sqrt(d); a number = what the scores are multiplied by; a rule
    softmax_dim: int = -1
    mask: str = "ok"  # ok | inverted | ignored | after_softmax | after_softmax_inf | after_softmax_renorm
    fill: str = "-inf"  # what hidden scores get: -inf | min (finfo.min; differs only where a whole softmax axis is hidden)
    empty_rows: str = "zero"  # a query with no visible key: zero (the reference, SDPA) | kept (what the fill gives)
    head_axis: bool | str = True  # mha: the mask gets a head axis before broadcasting; "kv" (gqa) | "tiled"
    split: str = "ok"  # mha: ok | blocks (view(B, H, T, d) with no transpose)
    merge: str = "ok"  # mha: ok | blocks (reshape(B, T, D) with no transpose back)
    out_proj: bool = True  # mha: W_o applied
    qkv_split: str = "ok"  # mha-fused: ok ([q | k | v], (B, T, 3, H, d)) | heads (view(B, T, H, 3, d))
    kv_repeat: str = "ok"  # gqa: ok (repeat_interleave: head h reads kv head h // g) | tile (.repeat)
    # rope (rope_fit.rotate applies them; kv-cache's CacheKnobs name their own and map onto these):
    rope_pairs: str = "half"  # half (i, i + d/2) | interleaved (2i, 2i+1)
    rope_sign: int = 1  # 1, or -1: rotates by -theta
    rope_positions: str = "given"  # given | arange (0..T-1: the positions, or the cache offset, ignored)
    rope_freqs: str = "ok"  # ok (base ** (-2i/d)) | another formula named in rope_fit.FREQUENCIES
    # relative-position (variants/relpos.py applies them):
    relpos_offset: str = "j-i"  # j-i (key j's offset from query i) | i-j (the direction flipped)
    relpos_far: str = "clip"  # clip | none (an index past the table raises) | wrap (% the table) | drop (no term)
    relpos_scaled: bool = True  # False: the position term added after the 1/sqrt(d) scaling
    # mistakes no slug of v1 named (issue 10):
    scale_at: str = "scores"  # scores | weights (the returned weights scaled after the softmax) | output
    fill_value: float | None = None  # a modest finite value (0, -1, ...) the hidden scores get instead of -inf
    per_head: str = "ok"  # W_o applied per head: ok | bias (bias added H times) | rows (W_o.weight's row blocks)
    #                       | diagonal (W_o's diagonal block per head) | first (W_o's first column block for every head)
    #                       with "+bias" (e.g. "rows+bias"): the bias added once per head


RIGHT = Knobs()

# scales people write, as rules of q's sizes (q is (B, H, T, d), so d_model = H * d): for the pair search, where
# one knob must hold for cases of different sizes
SCALE_RULES = {
    "1/d": lambda q: 1.0 / q.size(-1),
    "sqrt(d)": lambda q: math.sqrt(q.size(-1)),
    "1/sqrt(D)": lambda q: 1.0 / math.sqrt(q.size(1) * q.size(-1)),
}


def scale_of(knobs, q) -> float:
    """The factor the scores are multiplied by: 1/sqrt(d), a number, or a rule of SCALE_RULES."""
    if knobs.scale is None:
        return 1.0 / math.sqrt(q.size(-1))
    return SCALE_RULES[knobs.scale](q) if isinstance(knobs.scale, str) else knobs.scale


def attention(q, k, v, mask=None, knobs: Knobs = RIGHT, bias=None):
    """(out, weights) of softmax((q k^T + bias) * scale, masked) v, with one mistake per knob. `bias` (..., Tq, Tk)
    is relative-position's position term, scaled with the content unless knobs.relpos_scaled is False."""
    scale = knobs.scale  # (inline, not scale_of: a user's call of this function is named as this function)
    if scale is None:
        scale = 1.0 / math.sqrt(q.size(-1))
    elif isinstance(scale, str):
        scale = SCALE_RULES[scale](q)
    late, scale = (scale, 1.0) if knobs.scale_at != "scores" else (1.0, scale)  # a scale after the softmax
    scores = q @ k.transpose(-2, -1)  # (..., Tq, Tk)
    if bias is not None and knobs.relpos_scaled:
        scores = scores + bias
    scores = scores * scale
    if bias is not None and not knobs.relpos_scaled:
        scores = scores + bias
    if mask is not None and knobs.mask in ("ok", "inverted"):
        hidden = ~mask if knobs.mask == "ok" else mask
        fill = float("-inf") if knobs.fill == "-inf" else torch.finfo(scores.dtype).min
        scores = scores.masked_fill(hidden, fill if knobs.fill_value is None else knobs.fill_value)
    weights = torch.softmax(scores, dim=knobs.softmax_dim)
    if mask is not None and knobs.mask == "ok" and knobs.empty_rows == "zero":
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    if mask is not None and knobs.mask in ("after_softmax", "after_softmax_renorm"):
        weights = weights * mask  # probabilities zeroed after normalising: rows no longer sum to 1
    if mask is not None and knobs.mask == "after_softmax_inf":
        weights = weights.masked_fill(~mask, float("-inf"))  # -inf after the softmax: NaN once multiplied by v
    if knobs.scale_at == "weights":
        weights = weights * late
    out = weights @ v
    if mask is not None and knobs.mask == "after_softmax_renorm":  # the output divided by the rows' sums: right,
        out = out / weights.sum(-1, keepdim=True)  # but the weights returned still do not sum to 1
    return (out * late if knobs.scale_at == "output" else out), weights


def split_heads(x, H: int, how: str = "ok"):
    B, T, D = x.shape
    if how == "blocks":
        return x.reshape(B, H, T, D // H)  # cuts (T, D) into H contiguous blocks: mixes time into heads
    return x.view(B, T, H, D // H).transpose(1, 2)  # (B, H, T, d)


def merge_heads(y, how: str = "ok"):
    B, H, T, d = y.shape
    if how == "blocks":
        return y.reshape(B, T, H * d)  # (B, H, T, d) flattened as is: heads and time interleaved
    return y.transpose(1, 2).reshape(B, T, H * d)


def linear(x, params: dict, name: str):
    bias = params.get(f"{name}.bias")
    return torch.nn.functional.linear(x, params[f"{name}.weight"], bias)


def repeat_kv(t: torch.Tensor, groups: int, how: str = "ok") -> torch.Tensor:
    """(B, Hkv, T, d) -> (B, Hkv * groups, T, d): tiled when how is "tile", else interleaved (the right order)."""
    if how == "tile":
        return t.repeat(1, groups, 1, 1)  # head h reads kv head h % Hkv
    return t.repeat_interleave(groups, dim=1)  # head h reads kv head h // groups


def attend_and_merge(params: dict, q, k, v, mask=None, knobs: Knobs = RIGHT, bias=None):
    """The modules' tail: q (B, H, Tq, d) attends over k, v (B, H, Tk, d) under a mask with no head axis
    (B, Tq or 1, Tk), the heads merged back and W_o applied: (out (B, Tq, D), weights)."""
    if mask is not None and knobs.head_axis == "tiled":
        # heads flattened into (B*H) for bmm, the mask tiled with repeat(H, 1, 1): row b*H + h of the flat scores
        # gets mask[(b*H + h) % B], another sequence's mask (repeat_interleave(H, dim=0) is what lines up)
        B, H = q.size(0), q.size(1)
        mask = mask.repeat(H, 1, 1).view(B, H, *mask.shape[1:])  # (B, H, Tq or 1, Tk)
    elif mask is not None and knobs.head_axis:
        mask = mask.unsqueeze(1)  # (B, 1, Tq or 1, Tk)
    y, weights = attention(q, k, v, mask, knobs, bias)
    if knobs.per_head != "ok":
        return project_per_head(params, y, knobs.per_head), weights
    y = merge_heads(y, knobs.merge)  # (B, Tq, D)
    return (linear(y, params, "W_o") if knobs.out_proj else y), weights


def project_per_head(params: dict, y, how: str):
    """W_o applied to each head of y (B, H, Tq, dv) before any merge, and the heads summed (or, for "diagonal",
    put side by side): the ways of doing it that differ from W_o(merge(y)). Raises RuntimeError when the way
    cannot apply to these widths (the user's code raises there too)."""
    B, H, Tq, dv = y.shape
    W, b = params["W_o.weight"], params.get("W_o.bias")  # W (D_out, H * dv)
    blocks = {"bias": lambda h: W[:, h * dv:(h + 1) * dv],  # the right column block
              "rows": lambda h: W[h * dv:(h + 1) * dv, :].T,  # a row block: y @ W_o.weight, no transpose
              "first": lambda h: W[:, :dv]}  # every head through head 0's columns (a zero-padded head)
    kind = how.split("+")[0]
    if kind == "diagonal":  # head h through W_o's diagonal block, the heads concatenated
        if W.shape[0] != H * dv:
            raise RuntimeError("W_o is not square")
        outs = [torch.nn.functional.linear(y[:, h], W[h * dv:(h + 1) * dv, h * dv:(h + 1) * dv],
                                           None if b is None else b[h * dv:(h + 1) * dv]) for h in range(H)]
        return torch.cat(outs, dim=-1)  # (B, Tq, D)
    if kind == "rows" and W.shape[0] != H * dv:
        raise RuntimeError("W_o's rows are not H blocks of dv")
    out = sum(y[:, h] @ blocks[kind](h).T for h in range(H))  # (B, Tq, D_out)
    if b is not None:
        out = out + b * (H if kind == "bias" or how.endswith("+bias") else 1)
    return out


def mha(params: dict, H: int, query, key, value, mask=None, knobs: Knobs = RIGHT):
    """Multi-head attention from a state dict {W_q.weight, W_q.bias, ...}, with one mistake per knob."""
    q = split_heads(linear(query, params, "W_q"), H, knobs.split)  # (B, H, Tq, d)
    k = split_heads(linear(key, params, "W_k"), H, knobs.split)  # (B, H, Tk, d)
    v = split_heads(linear(value, params, "W_v"), H, knobs.split)
    return attend_and_merge(params, q, k, v, mask, knobs)


def mha_qk(params: dict, H: int, query, key):
    """The per-head q and k the reference computes, to relate the user's weights to raw scores."""
    return split_heads(linear(query, params, "W_q"), H), split_heads(linear(key, params, "W_k"), H)
