"""Mistakes of attention's backward pass (attention-backward): the softmax's backward without its row sum, the
scale left out of dq and dk, an operand transposed, and the forward recomputed wrong (scale, mask, softmax axis).

Each is a knob of variants/backward.py held to dq, dk and dv on every case; a transposed operand raises where
Tq != Tk, in the variant as in the user's code, and the square cases show its numbers. The forward's scale is
fitted (one factor s for the scores and for dq and dk), never guessed from a list.
"""

from __future__ import annotations

from attn_drill.judge.diagnoses import diagnosis, fitted_scale
from attn_drill.judge.diagnoses import first_variant as first  # (knobs, how) tried in turn
from attn_drill.judge.variants.backward import BackwardKnobs

BACKWARD = ("attention-backward",)



@diagnosis("softmax-backward-no-rowsum", BACKWARD)
def no_rowsum(check):
    return first(check, "softmax-backward-no-rowsum", [
        (BackwardKnobs(rowsum="none"), "dS = P * dP: the softmax's backward without subtracting rowsum(dP * P)"),
        (BackwardKnobs(rowsum="dp"), "dS = P * (dP - rowsum(dP)): the row sum of dP alone, not of dP * P")])


@diagnosis("backward-missing-scale", BACKWARD)
def backward_scale(check):
    return first(check, "backward-missing-scale", [
        (BackwardKnobs(unscaled=which), f"{said} without the 1/sqrt(d) (dv right: the recomputed weights are right)")
        for which, said in (("both", "dq and dk"), ("dq", "dq"), ("dk", "dk"))])


@diagnosis("backward-transposed", BACKWARD)
def transposed(check):
    return first(check, "backward-transposed", [
        (BackwardKnobs(transposed="dv"), "dv = P dout, not P^T dout"),
        (BackwardKnobs(transposed="dk"), "dk = dS q, not dS^T q"),
        (BackwardKnobs(transposed="dq"), "dq = dS^T k, not dS k"),
        (BackwardKnobs(transposed="dp"), "dP = v dout^T, not dout v^T")])


@diagnosis("mask-ignored", BACKWARD)
def mask_ignored(check):
    return first(check, "mask-ignored", [(BackwardKnobs(mask="ignored"), "the recomputed forward without the mask")])


@diagnosis("softmax-wrong-dim", BACKWARD)
def softmax_dim(check):
    return first(check, "softmax-wrong-dim", [(BackwardKnobs(softmax_dim=-2), "the recomputed softmax over the "
                                               "queries (dim=-2)")])


@diagnosis(("missing-scale", "wrong-scale"), BACKWARD)
def scale(check):
    """The one factor s for which the forward's scores * s and dq, dk * s reproduce the outputs, on every case;
    else the forward alone without its scale (dq and dk scaled as they should be)."""
    return fitted_scale(check, lambda s: BackwardKnobs(scale=s)) or first(check, "missing-scale", [
        (BackwardKnobs(forward_scale=1.0), "the recomputed forward without the 1/sqrt(d), dq and dk with it")])
