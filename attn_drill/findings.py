"""How a finding is made from a slug, its evidence and parameters; the words live apart, in mistakes.toml.

Detection code says *what* it found: a slug, evidence and a few parameters. mistakes.toml says how to tell the
user: level, title, why it matters, the fix (parameters fill `{name}` fields in the texts), and the hints.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from attn_drill.report import Finding

ERROR, WARNING = "error", "warning"

MISTAKES = Path(__file__).with_name("mistakes.toml")  # every slug's level, title, why, fix and hints


@lru_cache(maxsize=1)
def mistakes() -> dict[str, dict]:
    """mistakes.toml: slug -> {"level", "title", "why", "fix", "hints"}."""
    return tomllib.loads(MISTAKES.read_text(encoding="utf-8"))


# slug: (level, title, why it matters, fix)
WORDING: dict[str, tuple[str, str, str, str]] = {
    slug: (m["level"], m["title"], m["why"], m["fix"]) for slug, m in mistakes().items()}


# values-mismatch's fix, by the kind of step where the computation departs (localise.py names the kinds)
STEP_FIX: dict[str, str] = {
    "projection": "Each input goes through its own layer: q = W_q(query), k = W_k(key), v = W_v(value); check "
                  "which layer and which input each line uses.",
    "head split": "Split heads as view(B, T, H, d).transpose(1, 2): head h owns features [h*d, (h+1)*d) of every "
                  "token.",
    "kv repeat": "Repeat each kv head for its group of query heads, keys and values alike: "
                 "k.repeat_interleave(H // Hkv, dim=1), so query head h reads kv head h // (H // Hkv).",
    "scores": "Scores are q @ k.transpose(-2, -1): every query against every key, per head, (.., Tq, Tk).",
    "scale": "Divide the scores (not the weights, not the output) by math.sqrt(d), d the last dim of q and k.",
    "mask": "Hide a key with -inf in the scores where the mask is False, before the softmax: "
            "scores.masked_fill(~mask, float('-inf')). A 0 or a small number still leaves it weight.",
    "softmax": "Normalise each query's scores over the keys: softmax(scores, dim=-1), each row summing to 1.",
    "weighted sum": "The output is weights @ v: each query's weights (over the keys) times the values.",
    "merge": "Merge heads as y.transpose(1, 2).reshape(B, T, D): head h back at features [h*d, (h+1)*d).",
    "output projection": "Apply W_o once, to the merged heads (B, T, D), and return that.",
    "frequencies": "Pair i turns at base ** (-2i/d) for i in [0, d/2): inv_freq = base ** (-torch.arange(0, d, 2) / d).",
    "angles": "theta = position * inv_freq for each pair: positions (T,) or (B, T) times (d/2,), then cos and sin.",
    "pairs": "Half-split pairs: dimension i goes with i + d/2 (x1, x2 = x[..., :d/2], x[..., d/2:]).",
    "rotation": "Rotate each pair by +theta: [x1 cos - x2 sin, x2 cos + x1 sin], concatenated on the last axis.",
    "positions": "New tokens sit at T_past .. T_past + T_new - 1: rotate them by those positions.",
    "cache": "Concatenate the past and the new keys/values along time (axis 2) and return the grown cache.",
    "causal mask": "Query i sees key j iff j <= i + (Tk - Tq): bottom-right aligned, the diagonal included.",
    "running max": "Keep each row's running max m = max(m, block max) and shift the block's scores by it.",
    "rescale factor": "When the max rises, scale what was summed so far by exp(m_old - m_new).",
    "block probabilities": "p = exp(block scores - running max): unnormalised, every exponent <= 0.",
    "running sum": "l = l * exp(m_old - m_new) + p.sum(-1): the running denominator, rescaled like acc.",
    "accumulator": "acc = acc * exp(m_old - m_new) + p @ v_block, for every block.",
    "normalisation": "Divide at the end: out = acc / l, with the l of the last block.",
    "max subtraction": "Subtract each slice's own max along dim (keepdim=True), not one max for the whole tensor.",
    "exponentials": "e = exp(x - max): every exponent <= 0, the largest exactly 0.",
    "norm": "RMSNorm: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight; no mean subtracted, eps "
            "inside the root.",
    "step": "Recompute that step by hand on the case shown and compare it with your tensor, line by line.",
}
SUBLAYER = "in {sublayer}: {title}"  # a mistake inside a layer's attention sub-layer (encoder- and decoder-layer)


# a layer that never hands a sub-layer its mask: the mask-ignored finding, said of the layer, not of attention
NOT_HANDED_FIX = "Hand the mask on to the sub-layer: {call}."

# wrong-head-merge when whole heads are moved (reversed, shuffled), not interleaved with time steps
HEADS_MOVED = ("Heads are merged out of order",
               "Each head must return to its own features: head h to [h*d, (h+1)*d), in order.",
               "Concatenate the heads in order 0..H-1: torch.cat(heads, dim=-1), or "
               "y.transpose(1, 2).reshape(B, T, D)  # (B, H, T, d) -> (B, T, H, d) -> (B, T, D).")

# mask-head-broadcast when heads were flattened to (B*H) for bmm and the mask tiled head-major
MASK_TILED_FIX = ("Tile the mask the way the heads were flattened, batch-major: "
                  "mask.repeat_interleave(H, dim=0)  # (B*H, Tq, Tk), row b*H + h is sequence b's mask.")


def in_sublayer(finding: Finding, sublayers: list[str], evidence: str) -> Finding:
    """The finding of a mistake inside an attention sub-layer, said of that sub-layer: "in cross_attn: the
    mask is broadcast without a head axis"; `evidence` comes first, the sub-layer's own evidence after it."""
    title = finding.title[:1].lower() + finding.title[1:]
    finding.title = SUBLAYER.format(sublayer=" and ".join(sublayers), title=title)
    finding.evidence = f"{evidence}: {finding.evidence}" if finding.evidence else evidence
    return finding


def without_sublayer(title: str) -> str:
    """The title as the table words it, without in_sublayer's "in self_attn: " (a choice beside other titles)."""
    head, sep, rest = title.partition(": ")
    if sep and head.startswith("in ") and head.endswith("_attn"):
        return rest[:1].upper() + rest[1:]
    return title


class _Params(dict):
    def __missing__(self, key: str) -> str:  # a missing parameter never breaks the wording
        return "{" + key + "}"


def in_exercise(finding: Finding, exercise: str) -> Finding:
    """The finding as its exercise says it: mistakes.toml's `[slug.exercise]` table replaces the title, why or fix
    where the general words would mislead there (a causal diagonal in a sliding window is the window's edge)."""
    own = mistakes().get(finding.slug, {}).get(exercise)
    if isinstance(own, dict):
        finding.title = own.get("title", finding.title)
        finding.message = own.get("why", finding.message)
        finding.fix = own.get("fix", finding.fix)
    return finding


def make(slug: str, evidence: str = "", *, line: int | None = None, score: float = 0.0,
         picture: dict | None = None, level: str | None = None, **params) -> Finding:
    """Build a finding for `slug` with its wording filled in from `params`.

    `level` overrides the slug's usual level, for the rare warning that turns out to explain a failure."""
    default_level, title, why, fix = WORDING[slug]
    level = level or default_level
    p = _Params({"where": "at the top level of the file"} | params)
    return Finding(
        slug=slug,
        level=level,
        title=title.format_map(p),
        message=why.format_map(p),
        evidence=evidence,
        fix=fix.format_map(p),
        line=line,
        score=score,
        picture=picture,
    )
