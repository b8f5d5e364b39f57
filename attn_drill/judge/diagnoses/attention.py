"""Attention mistakes (sdpa, mha and the modules built like them): scale, softmax axis, masks, heads."""

from __future__ import annotations

import torch

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge import load
from attn_drill.judge.probes import modules as module_hooks
from attn_drill.judge.compare import closeness
from attn_drill.judge.diagnoses import (MASKING, MATCH, RESHAPES, SCORES, departure, diagnosis, first_outcome,
                                        line_of, locate, scale_finding, variant_finding)
from attn_drill.judge.variants.attention import Knobs

# the exercises these diagnoses run for: attention that returns its weights, and those of it with heads
ATTENTION = ("sdpa", "mha", "mha-fused", "gqa", "self-attention", "mha-dims", "relative-position")
MODULES = ("mha", "mha-fused", "gqa", "mha-dims", "relative-position")
WINDOWED = ("sliding-window",)  # attention that returns its weights, its mask built inside from a window


@diagnosis("softmax-wrong-dim", ATTENTION + WINDOWED)
def softmax_wrong_dim(check):
    for dim, how in ((-2, t("evidence.attention.diagnoses_attention.softmax_over_queries")),
                     (1, t("evidence.attention.diagnoses_attention.softmax_over_dim", dim=1)),
                     (0, t("evidence.attention.diagnoses_attention.softmax_over_dim", dim=0)),
                     (2, t("evidence.attention.diagnoses_attention.softmax_over_dim2"))):
        for fill in ("-inf", "min"):  # they differ where a whole query column is hidden
            f = variant_finding(check, "softmax-wrong-dim", Knobs(softmax_dim=dim, fill=fill), how,
                                line=line_of(first_outcome(check), {"softmax", "exp", "_softmax"}))
            if f:
                break
        if f:
            f.evidence += t("evidence.attention.diagnoses_attention.weights_not_over_keys")
            return f
    return None


@diagnosis("mask-inverted", ATTENTION)
def mask_inverted(check):
    return variant_finding(check, "mask-inverted", Knobs(mask="inverted"),
                           t("evidence.attention.diagnoses_attention.mask_inverted"),
                           line=line_of(first_masked(check), MASKING))


@diagnosis("mask-ignored", ATTENTION)
def mask_ignored(check):
    return variant_finding(check, "mask-ignored", Knobs(mask="ignored"),
                           t("evidence.attention.diagnoses_attention.mask_ignored"))


@diagnosis("mask-after-softmax", ATTENTION + WINDOWED)
def mask_after_softmax(check):
    line = line_of(first_masked(check), MASKING | {"__mul__", "mul"}, last=True)
    f = variant_finding(check, "mask-after-softmax", Knobs(mask="after_softmax"),
                        t("evidence.attention.diagnoses_attention.after_softmax_zero"), line=line) or \
        variant_finding(check, "mask-after-softmax", Knobs(mask="after_softmax_inf"),
                        t("evidence.attention.diagnoses_attention.after_softmax_inf"), line=line) or \
        variant_finding(check, "mask-after-softmax", Knobs(mask="after_softmax_renorm"),
                        t("evidence.attention.diagnoses_attention.after_softmax_renorm"), line=line)
    if f:
        o = first_masked(check)
        if o and o.outputs is not None:
            sums = o.outputs[1].sum(-1).flatten()
            f.evidence += t("evidence.attention.diagnoses_attention.rows_sum", low=float(sums.min()),
                            high=float(sums.max()))
    return f


@diagnosis("mask-head-broadcast", MODULES)
def mask_head_broadcast(check):
    grouped = False  # the kv-head variant named it (its scores are grouped by kv head)
    f = variant_finding(check, "mask-head-broadcast", Knobs(head_axis=False),
                        t("evidence.attention.diagnoses_attention.no_head_axis"))
    if f is None:
        f = variant_finding(check, "mask-head-broadcast", Knobs(head_axis="tiled"),
                            t("evidence.attention.diagnoses_attention.mask_tiled"))
        if f:
            f.fix = findings.mask_tiled_fix()
            f.line = line_of(first_outcome(check), {"repeat"}) or f.line
    if f is None and check.spec.id == "gqa":
        f = variant_finding(check, "mask-head-broadcast", Knobs(head_axis="kv"),
                            t("evidence.attention.diagnoses_attention.mask_on_kv_heads"))
        grouped = f is not None
    if f:
        raised = [o for o in check.outcomes if o.error is not None]
        if raised:
            o = raised[0]
            f.line = load.user_line(o.error, check.path)[0]
            key = ("evidence.attention.diagnoses_attention.broadcast_raises_kv" if grouped else
                   "evidence.attention.diagnoses_attention.broadcast_raises")
            f.evidence += t(key, error=load.describe(o.error), case=o.case.label)
    return f


# --- heads: the evidence adds where the module departs (probes/modules.py, on the layers its spec names) -----

def located(check):
    """An evidence tail for variant_finding: where the user's module first departs from the reference."""
    return lambda _example: locate(check)


@diagnosis("wrong-head-split", MODULES)
def wrong_head_split(check):
    return variant_finding(check, "wrong-head-split", Knobs(split="blocks"),
                           t("evidence.attention.diagnoses_attention.heads_cut"),
                           line=line_of(first_outcome(check), RESHAPES), extra=located(check))


@diagnosis("wrong-head-merge", MODULES)
def wrong_head_merge(check):
    line = line_of(first_outcome(check), RESHAPES, last=True)
    f = variant_finding(check, "wrong-head-merge", Knobs(merge="blocks"),
                        t("evidence.attention.diagnoses_attention.heads_merged"), line=line,
                        extra=located(check))
    if f:
        return f
    weights_right = all(o.outputs is not None and closeness(o.outputs[1], ref[1]) < MATCH
                        for o, ref in zip(check.outcomes, check.refs))
    permuted = module_hooks.merge_is_permuted(check) if weights_right else None
    if permuted:
        evidence, order = permuted
        gone = departure(check)  # the line that made the merged heads, not the last reshape
        f = findings.make("wrong-head-merge", evidence + t("evidence.attention.diagnoses_attention.weights_match"),
                          line=gone.line if gone and gone.kind == "merge" and gone.line else line, score=0.95)
        if order is not None:  # whole heads moved, not interleaved with time steps
            f.title, f.message, f.fix = findings.heads_moved()
        return f
    return None


@diagnosis("missing-output-projection", MODULES)
def missing_output_projection(check):
    return variant_finding(check, "missing-output-projection", Knobs(out_proj=False),
                           t("evidence.attention.diagnoses_attention.merged_returned"), extra=located(check))


def first_masked(check):
    return next((o for o in check.outcomes if check.spec.hides(o.case) and o.error is None), None)


# --- the scale: fitted from the weights the user returns --------------------------------------

def fit_scale(weights: torch.Tensor, raw: torch.Tensor, visible: torch.Tensor | None) -> float | None:
    """The s for which weights = softmax(s * raw) over the visible keys, by least squares on log-weights."""
    w = weights.detach().double().cpu()
    use = w > 0
    if visible is not None:
        use = use & visible.expand_as(w)
    if not bool(use.any()):
        return None
    y = torch.where(use, w.clamp_min(1e-300).log(), torch.zeros_like(w))
    x = torch.where(use, raw, torch.zeros_like(raw))
    n = use.sum(-1, keepdim=True).clamp_min(1)
    xc = torch.where(use, x - x.sum(-1, keepdim=True) / n, torch.zeros_like(x))
    yc = torch.where(use, y - y.sum(-1, keepdim=True) / n, torch.zeros_like(y))
    denom = float((xc * xc).sum())
    return float((xc * yc).sum()) / denom if denom > 0 else None


@diagnosis(("missing-scale", "wrong-scale"), ATTENTION + WINDOWED)
def scale(check):
    """The weights are softmax(s * q k^T) for a fitted s other than 1/sqrt(d)."""
    fitted, unfitted = [], []
    for o in check.outcomes:
        if o.outputs is None:
            return None
        s = fit_scale(o.outputs[1], check.spec.raw_scores(o.case), check.spec.visible(o.case))
        if s is None:  # every row sees one key (a window of 1): its weights hold no scale
            unfitted.append(o)
            continue
        var = check.spec.variant(o.case, Knobs(scale=s))
        if check.spec.distance(o.outputs, var, var) > MATCH:
            return None  # the weights are not softmax(s * q k^T): not (only) a scale mistake
        fitted.append((o, s))
    if len(fitted) < 2:
        return None
    for o in unfitted:  # such a case must still be what a scale fitted elsewhere (on the same d) gives
        scales = {s for f, s in fitted if f.case.dims["d"] == o.case.dims["d"]} or {s for _, s in fitted}
        if not any(check.spec.distance(o.outputs, var, var) <= MATCH
                   for var in (check.spec.variant(o.case, Knobs(scale=s)) for s in scales)):
            return None
    return scale_finding(check, fitted, line_of(fitted[0][0], SCORES))


