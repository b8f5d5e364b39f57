"""Mistakes of ALiBi (alibi): the slopes, the bias's form and sign, where the query sits, and the attention around
it (scale, causal mask, softmax).

The slopes are read off what alibi_slopes returns (the third output), their formula named when one of
variants.alibi.SLOPES gives them; everything else is a knob of variants/alibi.py held to the outputs on every
case, and the scale is fitted.
"""

from __future__ import annotations

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge.compare import closeness
from attn_drill.judge.diagnoses import diagnosis, fitted_scale
from attn_drill.judge.diagnoses import first_variant as first  # (knobs, how) tried in turn
from attn_drill.judge.variants import alibi as variants_alibi
from attn_drill.judge.variants.alibi import SLOPES, AlibiKnobs
from attn_drill.judge.variants.attention import Knobs

ALIBI = ("alibi",)



def _numbers(xs) -> str:
    return "[" + ", ".join(f"{float(x):.4g}" for x in xs[:6]) + (", ..." if len(xs) > 6 else "") + "]"


def formula(check) -> str | None:
    """The SLOPES formula that gives what the user's alibi_slopes returned on every case, in words."""
    for how in SLOPES:
        if how != "ok" and all(o.outputs is not None and o.outputs[2].shape == (o.case.dims["H"],) and
                               closeness(o.outputs[2].double(), variants_alibi.slopes(o.case.dims["H"], how).double())
                               <= 1e-6 for o in check.outcomes):
            return variants_alibi.said(how)
    return None


@diagnosis("alibi-slopes", ALIBI)
def alibi_slopes(check):
    """What alibi_slopes returns against the paper's slopes; else slopes of another formula used inside the
    attention alone (alibi_slopes right, alibi_attention computing its own)."""
    wrong = [(o, ref) for o, ref in zip(check.outcomes, check.refs)
             if o.outputs is not None and closeness(o.outputs[2], ref[2]) > 1e-6]
    if wrong:
        o, ref = next(((o, r) for o, r in wrong if o.case.dims["H"] & (o.case.dims["H"] - 1)), wrong[0])
        H = o.case.dims["H"]
        said = formula(check)
        counts = sorted({w.case.dims["H"] for w, _ in wrong})
        sep = t("evidence.modern.diagnoses_alibi.list_sep")
        evidence = (t("evidence.modern.diagnoses_alibi.returns", H=H, got=_numbers(o.outputs[2]), want=_numbers(ref[2]))
                    + (t("evidence.modern.diagnoses_alibi.formula", said=said) if said else "")
                    + t("evidence.modern.diagnoses_alibi.wrong_for", heads=sep.join(map(str, counts))))
        right = sorted({c.dims["H"] for c in check.cases} - set(counts))
        if right:
            evidence += t("evidence.modern.diagnoses_alibi.right_for", heads=sep.join(map(str, right)))
        return findings.make("alibi-slopes", evidence, score=1.0)
    return first(check, "alibi-slopes", [(AlibiKnobs(slopes=how, returned="ok"),
                                          t("evidence.modern.diagnoses_alibi.inside", said=variants_alibi.said(how)))
                                         for how in SLOPES if how != "ok"])


@diagnosis("alibi-sign", ALIBI)
def alibi_sign(check):
    return first(check, "alibi-sign", [
        (AlibiKnobs(bias="reward"), t("evidence.modern.diagnoses_alibi.reward")),
        (AlibiKnobs(bias="key_neg"), t("evidence.modern.diagnoses_alibi.key_neg"))])


@diagnosis("alibi-bias-scaled", ALIBI)
def alibi_scaled(check):
    return first(check, "alibi-bias-scaled", [
        (AlibiKnobs(bias="scaled"), t("evidence.modern.diagnoses_alibi.scaled"))])


@diagnosis("alibi-key-only", ALIBI)
def alibi_key_only(check):
    return first(check, "alibi-key-only", [
        (AlibiKnobs(bias="key"), t("evidence.modern.diagnoses_alibi.key"))])


@diagnosis(("causal-misaligned", "causal-diagonal", "missing-causal-mask"), ALIBI)
def causal(check):
    return first(check, "missing-causal-mask", [(AlibiKnobs(causal="none"),
                                                 t("evidence.modern.diagnoses_alibi.causal_ignored"))]) or \
        first(check, "causal-misaligned", [
            (AlibiKnobs(origin="start"), t("evidence.modern.diagnoses_alibi.origin_start")),
            (AlibiKnobs(causal="top-left"), t("evidence.modern.diagnoses_alibi.top_left")),
            (AlibiKnobs(origin="start", causal="top-left"), t("evidence.modern.diagnoses_alibi.origin_and_mask"))]) or \
        first(check, "causal-diagonal", [
            (AlibiKnobs(causal="no-diagonal"), t("evidence.modern.diagnoses_alibi.no_diagonal")),
            (AlibiKnobs(causal="one-future"), t("evidence.modern.diagnoses_alibi.one_future"))])


@diagnosis("softmax-wrong-dim", ALIBI)
def softmax_dim(check):
    return first(check, "softmax-wrong-dim", [(AlibiKnobs(attn=Knobs(softmax_dim=-2)),
                                               t("evidence.modern.diagnoses_alibi.softmax_queries"))])


@diagnosis(("missing-scale", "wrong-scale"), ALIBI)
def scale(check):
    """The one factor s for which q k^T * s - m |p - j| reproduces the outputs, on every case."""
    return fitted_scale(check, lambda s: AlibiKnobs(attn=Knobs(scale=s)))
