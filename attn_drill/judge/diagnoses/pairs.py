"""Two mistakes at once: when no single known mistake explains the outputs, a bounded search over pairs of them.

Each mistake here is one knob of an exercise family's variants (variants.Knobs for attention, FlashKnobs,
CacheKnobs, LayerKnobs); a pair sets two different knobs. A pair that reproduces every case names both
mistakes, each with the other in its evidence. At most ~90 pairs, each stopped at the second case it misses:
a fraction of a second, and only for a file that no single mistake explains.
"""

from __future__ import annotations

from dataclasses import fields, replace

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge.diagnoses import RESHAPES, SCORES, first_outcome, line_of, match
from attn_drill.judge.diagnoses.misplaced import SCALING
from attn_drill.judge.variants.attention import Knobs
from attn_drill.judge.variants.cache import CacheKnobs
from attn_drill.judge.variants.flash import FlashKnobs
from attn_drill.judge.variants.layers import LayerKnobs

# (slug, knobs, how it is said: the key evidence.attention.diagnoses_pairs.<key>, the exercises where it can happen)
ATTENTION = ("sdpa", "mha", "mha-fused", "gqa", "self-attention", "mha-dims", "relative-position")
MODULES = ("mha", "mha-fused", "gqa", "mha-dims", "relative-position")
FLASH, KV, LAYERS, DECODER = ("flash",), ("kv-cache",), ("encoder-layer", "decoder-layer"), ("decoder-layer",)
SINGLES = [
    ("missing-scale", Knobs(scale=1.0), "no_scale", ATTENTION),
    ("wrong-scale", Knobs(scale="1/d"), "divided_by_d", ATTENTION),
    ("wrong-scale", Knobs(scale="sqrt(d)"), "multiplied_by_sqrt_d", ATTENTION),
    ("wrong-scale", Knobs(scale="1/sqrt(D)"), "divided_by_sqrt_d_model", MODULES),
    ("mask-inverted", Knobs(mask="inverted"), "mask_inverted", ATTENTION),
    ("mask-ignored", Knobs(mask="ignored"), "no_mask", ATTENTION),
    ("mask-after-softmax", Knobs(mask="after_softmax"), "mask_after_softmax", ATTENTION),
    ("softmax-wrong-dim", Knobs(softmax_dim=-2), "softmax_over_queries", ATTENTION),
    ("mask-head-broadcast", Knobs(head_axis=False), "no_head_axis", MODULES),
    ("wrong-head-split", Knobs(split="blocks"), "heads_cut", MODULES),
    ("wrong-head-merge", Knobs(merge="blocks"), "heads_merged", MODULES),
    ("missing-output-projection", Knobs(out_proj=False), "no_w_o", MODULES),
    ("kv-repeat-order", Knobs(kv_repeat="tile"), "kv_tiled", ("gqa",)),
    ("qkv-split-order", Knobs(qkv_split="heads"), "fused_per_head", ("mha-fused",)),
    # flash: the blockwise computation's own knobs
    ("missing-scale", FlashKnobs(scale=1.0), "no_scale", FLASH),
    ("wrong-scale", FlashKnobs(scale="1/d"), "divided_by_d", FLASH),
    ("wrong-scale", FlashKnobs(scale="sqrt(d)"), "multiplied_by_sqrt_d", FLASH),
    ("causal-diagonal", FlashKnobs(causal="diagonal"), "causal_hides_diagonal", FLASH),
    ("causal-diagonal", FlashKnobs(causal="future"), "causal_shows_future", FLASH),
    ("causal-misaligned", FlashKnobs(causal="topleft"), "causal_top_left", FLASH),
    ("online-softmax-no-rescale", FlashKnobs(rescale="acc"), "acc_not_rescaled", FLASH),
    ("online-softmax-no-rescale", FlashKnobs(rescale="sum"), "sum_not_rescaled", FLASH),
    ("online-softmax-no-rescale", FlashKnobs(rescale="none"), "nothing_rescaled", FLASH),
    ("online-softmax-no-normalise", FlashKnobs(normalise="never"), "no_division", FLASH),
    ("scale-after-softmax", FlashKnobs(scale_at="output"), "scale_on_output", FLASH),
    # kv-cache
    ("missing-scale", CacheKnobs(scale="1"), "no_scale", KV),
    ("wrong-scale", CacheKnobs(scale="1/d"), "divided_by_d", KV),
    ("wrong-scale", CacheKnobs(scale="sqrt(d)"), "multiplied_by_sqrt_d", KV),
    ("wrong-scale", CacheKnobs(scale="1/sqrt(D)"), "divided_by_sqrt_d_model", KV),
    ("softmax-wrong-dim", CacheKnobs(softmax_dim=-2), "softmax_over_queries", KV),
    ("causal-diagonal", CacheKnobs(causal="no-diagonal"), "hidden_from_itself", KV),
    ("causal-diagonal", CacheKnobs(causal="one-future"), "sees_next", KV),
    ("causal-misaligned", CacheKnobs(causal="top-left"), "causal_top_left", KV),
    ("wrong-head-split", CacheKnobs(split="blocks"), "heads_cut", KV),
    ("wrong-head-merge", CacheKnobs(merge="blocks"), "heads_merged", KV),
    ("missing-output-projection", CacheKnobs(out_proj=False), "no_w_o", KV),
    ("kv-repeat-order", CacheKnobs(repeat="tile"), "kv_tiled", KV),
    ("rope-interleaved", CacheKnobs(pairs="adjacent"), "rope_adjacent", KV),
    ("rope-wrong-direction", CacheKnobs(sign=-1), "rope_minus_theta", KV),
    ("rope-positions-ignored", CacheKnobs(positions="restart"), "positions_restart", KV),
    ("rope-on-values", CacheKnobs(rope_values=True), "rope_on_values", KV),
    ("scale-after-softmax", CacheKnobs(scale_at="output"), "scale_after_softmax", KV),
    # the layers: a layer mistake, or one mistake inside every attention sub-layer
    ("missing-residual", LayerKnobs(missing_residual=("self_attn",)), "no_residual_self_attn", LAYERS),
    ("missing-residual", LayerKnobs(missing_residual=("cross_attn",)), "no_residual_cross_attn", DECODER),
    ("missing-residual", LayerKnobs(missing_residual=("ff",)), "no_residual_ff", LAYERS),
    ("missing-activation", LayerKnobs(activation="none"), "no_relu", LAYERS),
    ("missing-causal-mask", LayerKnobs(causal="none"), "no_causal_mask", DECODER),
    ("cross-attention-swapped", LayerKnobs(cross_swapped=True), "cross_swapped", DECODER),
    ("norm-placement", LayerKnobs(placement=("post",) * 3), "post_ln", LAYERS),
    ("norm-placement", LayerKnobs(placement=("pre",) * 3), "pre_ln", LAYERS),
    ("norm-placement", LayerKnobs(placement="flipped"), "norm_first_flipped", LAYERS),
    ("missing-scale", LayerKnobs(attn=Knobs(scale=1.0)), "attn_no_scale", LAYERS),
    ("wrong-scale", LayerKnobs(attn=Knobs(scale="1/sqrt(D)")), "attn_sqrt_d_model", LAYERS),
    ("wrong-scale", LayerKnobs(attn=Knobs(scale="1/d")), "attn_divided_by_d", LAYERS),
    ("mask-fill-zero", LayerKnobs(attn=Knobs(fill_value=0.0)), "attn_fill_zero", LAYERS),
    ("mask-inverted", LayerKnobs(attn=Knobs(mask="inverted")), "attn_mask_inverted", LAYERS),
    ("softmax-wrong-dim", LayerKnobs(attn=Knobs(softmax_dim=-2)), "attn_softmax_queries", LAYERS),
    ("wrong-head-merge", LayerKnobs(attn=Knobs(merge="blocks")), "heads_merged", LAYERS),
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
    return t("evidence.attention.diagnoses_pairs.together", first=said(how_a), second=said(how_b), n=n,
             case=example.case.label, slug_a=slug_a, slug_b=slug_b)


def said(how: str) -> str:
    """A SINGLES row's mistake in words, from its key."""
    return t(f"evidence.attention.diagnoses_pairs.{how}")


def pair(check) -> list:
    """Both findings of the first pair of mistakes that reproduces every case, or []."""
    singles = [s for s in SINGLES if check.spec.id in s[3]]
    for i, one in enumerate(singles):
        for other in singles[i + 1:]:
            both = together(check, one, other)
            if both:
                return [findings.make(one[0], both, line=line(check, one[0]), score=0.96),
                        findings.make(other[0], both, line=line(check, other[0]), score=0.95)]
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
            both = together(check, one, other)
            if both:
                cause.evidence += t("evidence.attention.diagnoses_pairs.besides", how=said(other[2]), said=both)
                return [findings.make(other[0], both, line=line(check, other[0]), score=0.95)]
    return []
