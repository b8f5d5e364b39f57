"""Two mistakes at once: when no single known mistake explains the outputs, a bounded search over pairs of them.

Each mistake here is one knob of an exercise family's variants (variants.Knobs for attention, FlashKnobs,
CacheKnobs, LayerKnobs); a pair sets two different knobs. A pair that reproduces every case names both
mistakes, each with the other in its evidence. At most ~90 pairs, each stopped at the second case it misses:
a fraction of a second, and only for a file that no single mistake explains.
"""

from __future__ import annotations

from dataclasses import fields, replace

from attn_drill import findings
from attn_drill.judge.diagnoses import RESHAPES, SCORES, first_outcome, line_of, match
from attn_drill.judge.diagnoses.misplaced import SCALING
from attn_drill.judge.variants.attention import Knobs
from attn_drill.judge.variants.cache import CacheKnobs
from attn_drill.judge.variants.flash import FlashKnobs
from attn_drill.judge.variants.layers import LayerKnobs

# (slug, knobs, how it is said, the exercises where it can happen)
ATTENTION = ("sdpa", "mha", "mha-fused", "gqa", "self-attention", "mha-dims", "relative-position")
MODULES = ("mha", "mha-fused", "gqa", "mha-dims", "relative-position")
FLASH, KV, LAYERS, DECODER = ("flash",), ("kv-cache",), ("encoder-layer", "decoder-layer"), ("decoder-layer",)
SINGLES = [
    ("missing-scale", Knobs(scale=1.0), "no 1/sqrt(d)", ATTENTION),
    ("wrong-scale", Knobs(scale="1/d"), "scores divided by d", ATTENTION),
    ("wrong-scale", Knobs(scale="sqrt(d)"), "scores multiplied by sqrt(d)", ATTENTION),
    ("wrong-scale", Knobs(scale="1/sqrt(D)"), "scores divided by sqrt(d_model)", MODULES),
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
    # flash: the blockwise computation's own knobs
    ("missing-scale", FlashKnobs(scale=1.0), "no 1/sqrt(d)", FLASH),
    ("wrong-scale", FlashKnobs(scale="1/d"), "scores divided by d", FLASH),
    ("wrong-scale", FlashKnobs(scale="sqrt(d)"), "scores multiplied by sqrt(d)", FLASH),
    ("causal-diagonal", FlashKnobs(causal="diagonal"), "a causal mask that hides the diagonal key", FLASH),
    ("causal-diagonal", FlashKnobs(causal="future"), "a causal mask that shows one future key", FLASH),
    ("causal-misaligned", FlashKnobs(causal="topleft"), "a top-left aligned causal mask", FLASH),
    ("online-softmax-no-rescale", FlashKnobs(rescale="acc"), "the accumulator not rescaled to a new max", FLASH),
    ("online-softmax-no-rescale", FlashKnobs(rescale="sum"), "the running sum not rescaled to a new max", FLASH),
    ("online-softmax-no-rescale", FlashKnobs(rescale="none"), "nothing rescaled to a new max", FLASH),
    ("online-softmax-no-normalise", FlashKnobs(normalise="never"), "no division by the running sum", FLASH),
    ("scale-after-softmax", FlashKnobs(scale_at="output"), "1/sqrt(d) applied to the output", FLASH),
    # kv-cache
    ("missing-scale", CacheKnobs(scale="1"), "no 1/sqrt(d)", KV),
    ("wrong-scale", CacheKnobs(scale="1/d"), "scores divided by d", KV),
    ("wrong-scale", CacheKnobs(scale="sqrt(d)"), "scores multiplied by sqrt(d)", KV),
    ("wrong-scale", CacheKnobs(scale="1/sqrt(D)"), "scores divided by sqrt(d_model)", KV),
    ("softmax-wrong-dim", CacheKnobs(softmax_dim=-2), "the softmax over the queries", KV),
    ("causal-diagonal", CacheKnobs(causal="no-diagonal"), "each token hidden from itself", KV),
    ("causal-diagonal", CacheKnobs(causal="one-future"), "each token seeing the next one", KV),
    ("causal-misaligned", CacheKnobs(causal="top-left"), "a top-left aligned causal mask", KV),
    ("wrong-head-split", CacheKnobs(split="blocks"), "heads cut as contiguous blocks", KV),
    ("wrong-head-merge", CacheKnobs(merge="blocks"), "heads merged with no transpose", KV),
    ("missing-output-projection", CacheKnobs(out_proj=False), "no W_o", KV),
    ("kv-repeat-order", CacheKnobs(repeat="tile"), "kv heads tiled", KV),
    ("rope-interleaved", CacheKnobs(pairs="adjacent"), "RoPE on adjacent pairs", KV),
    ("rope-wrong-direction", CacheKnobs(sign=-1), "RoPE turning by -theta", KV),
    ("rope-positions-ignored", CacheKnobs(positions="restart"), "positions restarting at 0 every call", KV),
    ("rope-on-values", CacheKnobs(rope_values=True), "RoPE applied to the values", KV),
    ("scale-after-softmax", CacheKnobs(scale_at="output"), "1/sqrt(d) applied after the softmax", KV),
    # the layers: a layer mistake, or one mistake inside every attention sub-layer
    ("missing-residual", LayerKnobs(missing_residual=("self_attn",)), "no residual around self_attn", LAYERS),
    ("missing-residual", LayerKnobs(missing_residual=("cross_attn",)), "no residual around cross_attn", DECODER),
    ("missing-residual", LayerKnobs(missing_residual=("ff",)), "no residual around the feed-forward", LAYERS),
    ("missing-activation", LayerKnobs(activation="none"), "no ReLU in the feed-forward", LAYERS),
    ("missing-causal-mask", LayerKnobs(causal="none"), "no causal mask in self-attention", DECODER),
    ("cross-attention-swapped", LayerKnobs(cross_swapped=True), "cross-attention's queries from memory", DECODER),
    ("norm-placement", LayerKnobs(placement=("post",) * 3), "post-LN whatever norm_first says", LAYERS),
    ("norm-placement", LayerKnobs(placement=("pre",) * 3), "pre-LN whatever norm_first says", LAYERS),
    ("norm-placement", LayerKnobs(placement="flipped"), "norm_first read the other way round", LAYERS),
    ("missing-scale", LayerKnobs(attn=Knobs(scale=1.0)), "no 1/sqrt(d) in the attention", LAYERS),
    ("wrong-scale", LayerKnobs(attn=Knobs(scale="1/sqrt(D)")), "the attention's scores divided by sqrt(d_model)",
     LAYERS),
    ("wrong-scale", LayerKnobs(attn=Knobs(scale="1/d")), "the attention's scores divided by d", LAYERS),
    ("mask-fill-zero", LayerKnobs(attn=Knobs(fill_value=0.0)), "the attention's hidden scores set to 0", LAYERS),
    ("mask-inverted", LayerKnobs(attn=Knobs(mask="inverted")), "the attention's mask inverted", LAYERS),
    ("softmax-wrong-dim", LayerKnobs(attn=Knobs(softmax_dim=-2)), "the attention's softmax over the queries",
     LAYERS),
    ("wrong-head-merge", LayerKnobs(attn=Knobs(merge="blocks")), "heads merged with no transpose", LAYERS),
]


# where each mistake shows in the user's code: the ops whose first (or last) traced line to point at
_MASK_OPS = {"masked_fill", "masked_fill_", "where", "tril", "triu", "__gt__", "__ge__", "__lt__", "__le__"}
LINE_OPS = {
    "missing-scale": (SCORES, False), "scale-after-softmax": (SCALING, True),
    "mask-inverted": (_MASK_OPS, False), "mask-ignored": (SCORES, False), "mask-after-softmax": (_MASK_OPS, False),
    "causal-diagonal": (_MASK_OPS, False), "causal-misaligned": (_MASK_OPS, False),
    "mask-head-broadcast": (_MASK_OPS, False), "softmax-wrong-dim": ({"softmax", "exp"}, False),
    "wrong-head-split": (RESHAPES, False), "wrong-head-merge": (RESHAPES, True),
    "missing-output-projection": ({"linear"}, True), "kv-repeat-order": ({"repeat", "repeat_interleave"}, False),
    "qkv-split-order": ({"chunk", "split", "unbind", "view", "reshape"}, False),
    "online-softmax-no-rescale": ({"exp"}, True), "online-softmax-no-normalise": ({"__truediv__", "div"}, True),
    "rope-interleaved": ({"cat", "stack"}, False), "rope-wrong-direction": ({"sin"}, False),
    "rope-positions-ignored": ({"arange"}, False), "rope-on-values": ({"cos", "sin"}, False),
    "missing-residual": ({"__add__", "add"}, True), "missing-activation": ({"linear"}, True),
    "wrong-scale": (SCALING, False), "norm-placement": ({"layer_norm"}, False),
    "mask-fill-zero": (_MASK_OPS, False),
}


def line(check, slug: str) -> int | None:
    ops, last = LINE_OPS.get(slug, (None, False))
    return line_of(first_outcome(check), ops, last=last) if ops else None


def changed(knobs) -> dict:
    """The knobs set away from the family's right answer (its defaults)."""
    right = type(knobs)()
    return {f.name: getattr(knobs, f.name) for f in fields(knobs) if getattr(knobs, f.name) != getattr(right, f.name)}


def together(check, one: tuple, other: tuple) -> str | None:
    """How the two mistakes (SINGLES rows) together reproduce every case, in words; None when they do not, when
    they set the same knob, or when the pair gives only NaN (NaN everywhere in yours and in the pair's is no
    evidence of those two: any NaN-making code would match)."""
    import torch

    slug_a, knobs_a, how_a, _ = one
    slug_b, knobs_b, how_b, _ = other
    b = changed(knobs_b)
    if slug_a == slug_b or changed(knobs_a).keys() & b.keys():
        return None
    knobs, n = replace(knobs_a, **b), len(check.outcomes)
    matched, telling, _, example, _ = match(check, knobs)
    if matched < n or not telling or example is None:
        return None
    var = check.spec.variant(example.case, knobs)
    if not all(bool(torch.isfinite(t).any()) for t in var if isinstance(t, torch.Tensor) and t.is_floating_point()):
        return None
    return (f"{how_a} and {how_b} together reproduce your outputs on all {n} cases, e.g. {example.case.label}: "
            f"two mistakes ({slug_a} and {slug_b})")


def pair(check) -> list:
    """Both findings of the first pair of mistakes that reproduces every case, or []."""
    singles = [s for s in SINGLES if check.spec.id in s[3]]
    for i, one in enumerate(singles):
        for other in singles[i + 1:]:
            said = together(check, one, other)
            if said:
                return [findings.make(one[0], said, line=line(check, one[0]), score=0.96),
                        findings.make(other[0], said, line=line(check, other[0]), score=0.95)]
    return []


def second(check, cause) -> list:
    """In a layer, the mistake found inside an attention sub-layer may not be the only one: when no single knob
    of its slug reproduces the whole layer's outputs but a pair with another does, that other mistake's finding."""
    singles = [s for s in SINGLES if check.spec.id in s[3]]
    mine = [s for s in singles if s[0] == cause.slug]
    if any(match(check, knobs)[0] == len(check.outcomes) for _, knobs, _, _ in mine):
        return []  # it explains everything alone
    for one in mine:
        for other in singles:
            said = together(check, one, other)
            if said:
                cause.evidence += f"; and {other[2]} besides: {said}"
                return [findings.make(other[0], said, line=line(check, other[0]), score=0.95)]
    return []
