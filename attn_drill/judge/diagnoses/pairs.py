"""Two mistakes at once: when no single known mistake explains the outputs, a bounded search over pairs of them.

Each mistake here is one knob of the attention variants (variants.Knobs); a pair sets two different knobs. A pair
that reproduces every case names both mistakes, each with the other in its evidence. At most ~50 pairs, each
computed on the check's few small cases: a fraction of a second, and only for a file no single mistake explains.
"""

from __future__ import annotations

from dataclasses import fields, replace

from attn_drill import findings
from attn_drill.judge.diagnoses import match
from attn_drill.judge.variants import RIGHT, Knobs

# (slug, knobs, how it is said, the exercises where it can happen)
ATTENTION = ("sdpa", "mha", "mha-fused", "gqa", "self-attention", "mha-dims", "relative-position")
MODULES = ("mha", "mha-fused", "gqa", "mha-dims", "relative-position")
SINGLES = [
    ("missing-scale", Knobs(scale=1.0), "no 1/sqrt(d)", ATTENTION),
    ("mask-inverted", Knobs(mask="inverted"), "the mask inverted", ATTENTION),
    ("mask-ignored", Knobs(mask="ignored"), "no mask at all", ATTENTION),
    ("mask-after-softmax", Knobs(mask="after_softmax"), "the mask applied after the softmax", ATTENTION),
    ("softmax-wrong-dim", Knobs(softmax_dim=-2), "the softmax over the queries", ATTENTION),
    ("mask-head-broadcast", Knobs(head_axis=False), "the mask broadcast with no head axis", MODULES),
    ("wrong-head-split", Knobs(split="blocks"), "heads cut as contiguous blocks", MODULES),
    ("wrong-head-merge", Knobs(merge="blocks"), "heads merged with no transpose", MODULES),
    ("missing-output-projection", Knobs(out_proj=False), "no W_o", MODULES),
    ("kv-repeat-order", Knobs(kv_repeat="tile"), "kv heads tiled", ("gqa",)),
    ("qkv-split-order", Knobs(qkv_split="heads"), "the fused projection split per head", ("mha-fused",)),
]


def changed(knobs: Knobs) -> dict:
    return {f.name: getattr(knobs, f.name) for f in fields(Knobs) if getattr(knobs, f.name) != getattr(RIGHT, f.name)}


def pair(check) -> list:
    """Both findings of the first pair of mistakes that reproduces every case, or []."""
    singles = [s for s in SINGLES if check.spec.id in s[3]]
    n = len(check.outcomes)
    for i, (slug_a, knobs_a, how_a, _) in enumerate(singles):
        for slug_b, knobs_b, how_b, _ in singles[i + 1:]:
            a, b = changed(knobs_a), changed(knobs_b)
            if slug_a == slug_b or a.keys() & b.keys():
                continue
            matched, telling, worst, example = match(check, replace(knobs_a, **b))
            if matched < n or not telling or example is None:
                continue
            said = f"{how_a} and {how_b} together reproduce your outputs on all {n} cases, e.g. {example.case.label}"
            return [findings.make(slug_a, f"{said}: two mistakes ({slug_a} and {slug_b})", score=0.96),
                    findings.make(slug_b, f"{said}: two mistakes ({slug_a} and {slug_b})", score=0.95)]
    return []
