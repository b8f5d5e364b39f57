"""Known mistakes of cached attention (kv-cache), as executable variants.

`run` feeds a case's calls one after another, each getting the cache the previous call returned (as the
checker runs the user's module), in float64 from the case's weights. Default knobs give the reference's
answer (tests/test_reference_kv_cache.py proves it); each knob reproduces one real mistake.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from attn_drill.i18n import t
from attn_drill.judge.probes import rope as rope_fit
from attn_drill.judge.variants.modules import gqa_project
from attn_drill.judge.variants.attention import Knobs, linear, merge_heads, project_per_head, repeat_kv, split_heads


@dataclass(frozen=True)
class CacheKnobs:
    scale: float | str | None = None  # None = 1/sqrt(d); a number = what the scores are multiplied by; a key of SCALES
    softmax_dim: int = -1
    causal: str = "ok"  # ok (bottom-right) | top-left | top-left-chunks (no mask for 1 token) | no-diagonal
    #                     | one-future | none (no causal mask at all)
    fill: str = "-inf"  # what hidden scores get: -inf | min (finfo.min) | bias (-1e9 added) | zero (-inf, empty rows 0)
    split: str = "ok"  # ok | blocks (view(B, H, T, d) with no transpose)
    merge: str = "ok"  # ok | blocks (reshape(B, T, D) with no transpose back)
    out_proj: bool = True  # W_o applied
    repeat: str = "interleave"  # interleave (head h reads kv head h // g) | tile (.repeat: h % Hkv)
    pairs: str = "half"  # half: pairs (i, i + d/2) | adjacent: pairs (2i, 2i + 1)
    sign: int = 1  # -1: turned by -theta
    freq: str = "ok"  # the frequency formula: a key of rope_fit.FREQUENCIES ("ok" = base ** (-2i/d))
    inv_freq: tuple[float, ...] | None = None  # each pair's angle per position, fitted: overrides freq
    positions: str = "ok"  # ok (T_past + t) | restart (every call counts from 0)
    rope_values: bool = False  # True: v turned by RoPE like k (and cached turned)
    scale_at: str = "scores"  # scores | output (1/sqrt(d) applied after the softmax, to the heads' output)
    per_head: str = "ok"  # W_o applied per head before the merge: a way of variants.project_per_head
    fill_value: float | None = None  # a number: what hidden scores are set to instead of -inf (mask-fill-zero)

    @property
    def rope(self) -> Knobs:
        """The RoPE mistakes under the names rope_fit.rotate reads (the positions are the cache's own)."""
        return Knobs(rope_pairs="interleaved" if self.pairs == "adjacent" else "half", rope_sign=self.sign,
                     rope_freqs=self.freq)


RIGHT = CacheKnobs()

# scales people really write, as rules of the case's sizes: rule -> (how to say it, dims -> the factor)
SCALES = {
    "1": ("1 (no scale)", lambda m: 1.0),
    "1/d": ("1/d", lambda m: 1.0 / m["d"]),
    "sqrt(d)": ("sqrt(d), multiplied", lambda m: m["d"] ** 0.5),
    "1/sqrt(D)": ("1/sqrt(d_model)", lambda m: m["D"] ** -0.5),
    "1/D": ("1/d_model", lambda m: 1.0 / m["D"]),
    "1/sqrt(Dkv)": ("1/sqrt(num_kv_heads * d)", lambda m: (m["Hkv"] * m["d"]) ** -0.5),
}


def scale_said(rule: str) -> str:
    """SCALES' way of saying `rule`, in the language in use."""
    if rule == "1":
        return t("evidence.cache.variants_cache.no_scale")
    if rule == "sqrt(d)":
        return t("evidence.cache.variants_cache.multiplied")
    return SCALES[rule][0]  # a formula: the same in every language


def scale_of(knobs: CacheKnobs, dims: dict) -> float:
    if knobs.scale is None:
        return 1.0 / math.sqrt(dims["d"])
    return SCALES[knobs.scale][1](dims) if isinstance(knobs.scale, str) else knobs.scale


def visible(Tq: int, Tk: int, how: str = "ok") -> torch.Tensor:
    """bool (Tq, Tk): which keys each new query sees."""
    past = Tk - Tq
    if how == "none" or how == "top-left-chunks" and Tq == 1:
        return torch.ones(Tq, Tk, dtype=torch.bool)  # a mask built only for chunks: one new token sees all
    shift = {"ok": past, "top-left": 0, "top-left-chunks": 0, "no-diagonal": past - 1, "one-future": past + 1}[how]
    return torch.ones(Tq, Tk, dtype=torch.bool).tril(diagonal=shift)


def attend(q, k, v, knobs: CacheKnobs, scale: float):
    """softmax(q k^T * scale, causal) v; q (B, H, Tq, d), k and v (B, H, Tk, d) already repeated."""
    Tq, Tk = q.size(-2), k.size(-2)
    if knobs.scale_at != "scores":  # the scale moved past the softmax, onto the output
        return attend(q, k, v, replace(knobs, scale_at="scores"), 1.0) * scale
    scores = (q @ k.transpose(-2, -1)) * scale  # (B, H, Tq, Tk)
    seen = visible(Tq, Tk, knobs.causal)
    if knobs.fill_value is not None:  # a modest finite value: hidden keys keep some weight
        scores = scores.masked_fill(~seen, knobs.fill_value)
    elif knobs.fill == "bias":
        scores = scores + (~seen).double() * -1e9
    else:
        fill = torch.finfo(scores.dtype).min if knobs.fill == "min" else float("-inf")
        scores = scores.masked_fill(~seen, fill)
    weights = torch.softmax(scores, dim=knobs.softmax_dim)
    if knobs.fill == "zero":
        weights = weights.masked_fill(~seen.any(-1, keepdim=True), 0.0)
    return weights @ v


def project(params: dict, dims: dict, base: float, x, t_past: int, knobs: CacheKnobs = RIGHT):
    """q (B, H, T, d) and the new k, v (B, Hkv, T, d) of a call, q and k turned at their positions."""
    q, k, v = gqa_project(params, dims["H"], dims["Hkv"], x, knobs.split)
    start = 0 if knobs.positions == "restart" else t_past
    positions = torch.arange(start, start + x.size(1))
    q = rope_fit.rotate(q, positions, base, knobs.rope, knobs.inv_freq)
    k = rope_fit.rotate(k, positions, base, knobs.rope, knobs.inv_freq)
    if knobs.rope_values:
        v = rope_fit.rotate(v, positions, base, knobs.rope, knobs.inv_freq)
    return q, k, v


def finish(params: dict, dims: dict, q, k, v, knobs: CacheKnobs = RIGHT, scale: float | None = None):
    """Attention of q over all keys (k, v with Hkv heads), merged and projected: out (B, T, D)."""
    g = dims["H"] // dims["Hkv"]
    scale = scale_of(knobs, dims) if scale is None else scale
    y = attend(q, repeat_kv(k, g, knobs.repeat), repeat_kv(v, g, knobs.repeat), knobs, scale)
    if knobs.per_head != "ok":
        return project_per_head(params, y, knobs.per_head)
    y = merge_heads(y, knobs.merge)  # (B, T, D)
    return linear(y, params, "W_o") if knobs.out_proj else y


def step(params: dict, dims: dict, base: float, x, cache, t_past: int, knobs: CacheKnobs = RIGHT):
    """One call: x (B, T, D) new tokens after t_past cached ones; returns out (B, T, D), (k_all, v_all)."""
    q, k, v = project(params, dims, base, x, t_past, knobs)
    if cache is not None:
        k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)  # (B, Hkv, Tk, d)
    return finish(params, dims, q, k, v, knobs), (k, v)


def run(params: dict, dims: dict, base: float, x, steps, past=None, knobs: CacheKnobs = RIGHT):
    """Every call of a case in turn: (out of all new tokens (B, T, D), final k, final v)."""
    cache, t_past, start, outs = past, (0 if past is None else past[0].size(2)), 0, []
    for n in steps:
        out, cache = step(params, dims, base, x[:, start:start + n], cache, t_past, knobs)
        outs.append(out)
        start, t_past = start + n, t_past + n
    return torch.cat(outs, dim=1), cache[0], cache[1]


def raw_keys(params: dict, dims: dict, x, name: str = "W_k") -> torch.Tensor:
    """The keys before RoPE (or the values, name="W_v"), (B, Hkv, T, d): what a user's cache holds, turned."""
    return split_heads(linear(x, params, name), dims["Hkv"])
