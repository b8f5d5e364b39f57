"""Known mistakes of multi-head latent attention (mla), as executable variants.

`run` computes the model answer over a case's calls from its float64 weights with default knobs
(tests/test_reference_mla proves it), each call continuing from the cache the previous call returned, as the
user's own module does; each knob reproduces one real mistake, on every call. The attention's own mistakes are
variants.attention's Knobs (scale, softmax axis, the RoPE family), read here as they are read for llama-block.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attn_drill.judge.probes import rope as rope_fit
from attn_drill.judge.variants.attention import RIGHT, Knobs, scale_of
from attn_drill.judge.variants.llama import rms_norm

NORM_EPS = 1e-6  # kv_norm's, fixed by the contract
LONE_EPS = 0.1  # the checker's own call of RMSNorm, where eps shows


@dataclass(frozen=True)
class MLAKnobs:
    norm: str = "ok"  # RMSNorm: ok | mean | var | eps_outside | no_eps (variants.llama.rms_norm)
    latent: str = "ok"  # what reaches W_kv_b: ok (kv_norm's output) | raw (kv_norm skipped) | twice (normalised twice)
    #                     | reread (the right cache, normalised again where it is read)
    cache: str = "ok"  # what the returned cache holds: ok | raw (the latent before kv_norm, normalised when read)
    #                    | unrotated (k_pe before RoPE, turned when read, at 0 .. Tk-1)
    kv_b: str = "ok"  # W_kv_b's output read as: ok (per head [k_nope | v]) | blocked ([all k_nope | all v])
    q: str = "ok"  # W_q's output read as: ok (per head [q_nope | q_pe]) | blocked ([all q_nope | all q_pe])
    kv_a: str = "ok"  # W_kv_a's output read as: ok ([c_kv | k_pe]) | swapped ([k_pe | c_kv])
    rope: str = "ok"  # ok (q_pe, k_pe) | nope (on q_nope and k_nope instead) | whole (on all of q and k)
    #                   | whole_q, whole_k (on all of one, the other right) | no_k (k_pe left unturned) | no_q
    #                   | nope_q (q_nope turned instead of q_pe; the key right)
    causal: str = "ok"  # ok (j <= past + i) | none | no-diagonal | one-future (j <= past + i + 1)
    #                     | top-left (j <= i: the cache's length ignored) | first-call (masked only without a cache)
    rope_width: str = "ok"  # the width in RoPE's exponent, base ** (-2i / width): ok (d_rope) | head (d_nope + d_rope)
    #                         | nope (d_nope)
    attn: Knobs = RIGHT  # scale, softmax_dim, rope_* (rope_fit.rotate reads them)


RIGHT_MLA = MLAKnobs()


def turn(x, positions, base: float, knobs: MLAKnobs, width: int | None = None):
    """RoPE of x (B, H or 1, T, w) at positions, with the attention knobs' RoPE mistakes; `width`, the one in the
    exponent when it is not x's own."""
    omega = None if width is None else (base ** -(torch.arange(0, x.size(-1), 2, dtype=torch.float64) / width)).tolist()
    return rope_fit.rotate(x, positions, base, knobs.attn, omega=omega)


def latent(params: dict, x, config: dict, knobs: MLAKnobs):
    """(c_kv (B, T, r) raw, k_pe (B, T, dr) unturned): W_kv_a's output, split the contract's way or the knob's."""
    r, dr = config["kv_rank"], config["d_rope"]
    a = F.linear(x, params["W_kv_a.weight"])  # (B, T, r + dr)
    if knobs.kv_a == "swapped":
        return a[..., dr:], a[..., :dr]
    return a[..., :r], a[..., r:]


def heads(t, H: int, first: int, second: int, how: str):
    """(B, T, H * (first + second)) -> ((B, H, T, first), (B, H, T, second)): per head, or as two blocks."""
    B, T, _ = t.shape
    if how == "blocked":
        a, b = t[..., : H * first], t[..., H * first:]
        return (a.reshape(B, T, H, first).transpose(1, 2), b.reshape(B, T, H, second).transpose(1, 2))
    t = t.view(B, T, H, first + second).transpose(1, 2)
    return t[..., :first], t[..., first:]


def call(params: dict, x, cache, config: dict, knobs: MLAKnobs):
    """One forward call: (out (B, T, D), (c_kv_all, k_pe_all)) as the knobs' module returns them."""
    H, r, dn, dr, dv = (config[n] for n in ("num_heads", "kv_rank", "d_nope", "d_rope", "d_v"))
    base, eps = config["rope_base"], NORM_EPS
    B, T, _ = x.shape
    past = 0 if cache is None else cache[0].size(1)
    Tk = past + T
    pos_new = torch.arange(past, Tk)
    pos_all = torch.arange(Tk)
    width = {"ok": None, "head": dn + dr, "nope": dn}[knobs.rope_width]

    def rot(x, positions):  # RoPE as the knobs have it, the exponent's width included
        return turn(x, positions, base, knobs, width)

    def norm(t):
        return rms_norm(t, params["kv_norm.weight"], eps, knobs.norm)

    q_nope, q_pe = heads(F.linear(x, params["W_q.weight"]), H, dn, dr, knobs.q)  # (B, H, T, dn), (B, H, T, dr)
    c_raw, pe_raw = latent(params, x, config, knobs)
    c_new = c_raw if knobs.cache == "raw" or knobs.latent == "raw" else norm(c_raw)
    if knobs.latent == "twice":
        c_new = norm(c_new)
    whole_q, whole_k = knobs.rope in ("whole", "whole_q"), knobs.rope in ("whole", "whole_k")
    pe_new = pe_raw if knobs.cache == "unrotated" or knobs.rope in ("nope", "no_k") or whole_k else \
        rot(pe_raw[:, None], pos_new)[:, 0]
    c_all = c_new if cache is None else torch.cat([cache[0], c_new], dim=1)  # (B, Tk, r)
    pe_all = pe_new if cache is None else torch.cat([cache[1], pe_new], dim=1)  # (B, Tk, dr)

    c_used = norm(c_all) if knobs.cache == "raw" or knobs.latent == "reread" else c_all  # normalised where read
    k_pe = pe_all[:, None]  # (B, 1, Tk, dr): one rope key, every head
    if knobs.cache == "unrotated":
        k_pe = rot(k_pe, pos_all)
    k_nope, v = heads(F.linear(c_used, params["W_kv_b.weight"]), H, dn, dv, knobs.kv_b)  # (B, H, Tk, dn | dv)

    if knobs.rope in ("ok", "no_k", "whole_k"):
        q_pe = rot(q_pe, pos_new)
    elif knobs.rope == "nope":
        q_nope, k_nope = rot(q_nope, pos_new), rot(k_nope, pos_all)
    elif knobs.rope == "nope_q":
        q_nope = rot(q_nope, pos_new)
    q, k = torch.cat([q_nope, q_pe], -1), torch.cat([k_nope, k_pe.expand(B, H, Tk, dr)], -1)
    if whole_q:  # one rotation over the whole head, [nope | pe] as one vector
        q = rot(q, pos_new)
    if whole_k:
        k = rot(k, pos_all)
    scores = q @ k.transpose(-2, -1) * scale_of(knobs.attn, q)  # (B, H, T, Tk)
    if knobs.causal != "none" and not (knobs.causal == "first-call" and past):
        shift = {"ok": past, "no-diagonal": past - 1, "one-future": past + 1, "top-left": 0,
                 "first-call": past}[knobs.causal]
        seen = torch.ones(T, Tk, dtype=torch.bool).tril(diagonal=shift)
        scores = scores.masked_fill(~seen, float("-inf"))
    weights = torch.softmax(scores, dim=knobs.attn.softmax_dim)
    y = (weights @ v).transpose(1, 2).reshape(B, T, H * dv)
    return F.linear(y, params["W_o.weight"]), (c_all, pe_all)


def run(params: dict, x, config: dict, steps, past=None, knobs: MLAKnobs = RIGHT_MLA):
    """(out (B, T, D), c_kv_all, k_pe_all) over the case's calls in float64, each fed the cache the last returned."""
    outs, cache, start = [], past, 0
    for n in steps:
        out, cache = call(params, x[:, start:start + n], cache, config, knobs)
        outs.append(out)
        start += n
    return torch.cat(outs, dim=1), cache[0], cache[1]


def lone_norm(params: dict, z, knobs: MLAKnobs = RIGHT_MLA):
    """The checker's own call RMSNorm(kv_rank, eps=0.1)(z), with the norm knob."""
    return rms_norm(z, params["norm.weight"], LONE_EPS, knobs.norm)
