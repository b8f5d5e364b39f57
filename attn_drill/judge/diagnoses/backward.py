"""Mistakes of attention's backward pass (attention-backward): the softmax's backward without its row sum, the
scale left out of dq and dk, an operand transposed, and the forward recomputed wrong (scale, mask, softmax axis).

Each is a knob of variants/backward.py held to dq, dk and dv on every case; a transposed operand raises where
Tq != Tk, in the variant as in the user's code, and the square cases show its numbers. The forward's scale is
fitted (one factor s for the scores and for dq and dk), never guessed from a list.
"""

from __future__ import annotations

from attn_drill.i18n import t
from attn_drill.judge.diagnoses import diagnosis, fitted_scale
from attn_drill.judge.diagnoses import first_variant as first  # (knobs, how) tried in turn
from attn_drill.judge.variants.backward import BackwardKnobs

BACKWARD = ("attention-backward",)



@diagnosis("softmax-backward-no-rowsum", BACKWARD)
def no_rowsum(check):
    return first(check, "softmax-backward-no-rowsum", [
        (BackwardKnobs(rowsum="none"), t("evidence.modern.diagnoses_backward.no_rowsum")),
        (BackwardKnobs(rowsum="dp"), t("evidence.modern.diagnoses_backward.rowsum_dp"))])


@diagnosis("backward-missing-scale", BACKWARD)
def backward_scale(check):
    return first(check, "backward-missing-scale", [
        (BackwardKnobs(unscaled=which), t("evidence.modern.diagnoses_backward.unscaled", said=said))
        for which, said in (("both", t("evidence.modern.diagnoses_backward.dq_and_dk")), ("dq", "dq"), ("dk", "dk"))])


@diagnosis("backward-transposed", BACKWARD)
def transposed(check):
    return first(check, "backward-transposed", [
        (BackwardKnobs(transposed=which), t(f"evidence.modern.diagnoses_backward.transposed_{which}"))
        for which in ("dv", "dk", "dq", "dp")])


@diagnosis("mask-ignored", BACKWARD)
def mask_ignored(check):
    return first(check, "mask-ignored", [(BackwardKnobs(mask="ignored"),
                                          t("evidence.modern.diagnoses_backward.mask_ignored"))])


@diagnosis("softmax-wrong-dim", BACKWARD)
def softmax_dim(check):
    return first(check, "softmax-wrong-dim", [(BackwardKnobs(softmax_dim=-2),
                                               t("evidence.modern.diagnoses_backward.softmax_queries"))])


@diagnosis(("missing-scale", "wrong-scale"), BACKWARD)
def scale(check):
    """The one factor s for which the forward's scores * s and dq, dk * s reproduce the outputs, on every case;
    else the forward alone without its scale (dq and dk scaled as they should be)."""
    return fitted_scale(check, lambda s: BackwardKnobs(scale=s)) or first(check, "missing-scale", [
        (BackwardKnobs(forward_scale=1.0), t("evidence.modern.diagnoses_backward.forward_unscaled"))])
