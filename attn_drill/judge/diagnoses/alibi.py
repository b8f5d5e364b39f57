"""Mistakes of ALiBi (alibi): the slopes, the bias's form and sign, where the query sits, and the attention around
it (scale, causal mask, softmax).

The slopes are read off what alibi_slopes returns (the third output), their formula named when one of
variants.alibi.SLOPES gives them; everything else is a knob of variants/alibi.py held to the outputs on every
case, and the scale is fitted.
"""

from __future__ import annotations

from attn_drill import findings
from attn_drill.judge.compare import closeness
from attn_drill.judge.diagnoses import diagnosis, fitted_scale
from attn_drill.judge.diagnoses import first_variant as first  # (knobs, how) tried in turn
from attn_drill.judge.variants import alibi as variants_alibi
from attn_drill.judge.variants.alibi import SLOPES, AlibiKnobs
from attn_drill.judge.variants.attention import Knobs

ALIBI = ("alibi",)



def _numbers(t) -> str:
    return "[" + ", ".join(f"{float(x):.4g}" for x in t[:6]) + (", ..." if len(t) > 6 else "") + "]"


def formula(check) -> str | None:
    """The SLOPES formula that gives what the user's alibi_slopes returned on every case, in words."""
    for how, (said, _) in SLOPES.items():
        if how != "ok" and all(o.outputs is not None and o.outputs[2].shape == (o.case.dims["H"],) and
                               closeness(o.outputs[2].double(), variants_alibi.slopes(o.case.dims["H"], how).double())
                               <= 1e-6 for o in check.outcomes):
            return said
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
        evidence = (f"alibi_slopes({H}) returns {_numbers(o.outputs[2])}, the paper's are {_numbers(ref[2])}"
                    + (f": {said}" if said else "") + f"; wrong for {', '.join(map(str, counts))} heads")
        right = sorted({c.dims["H"] for c in check.cases} - set(counts))
        if right:
            evidence += f", right for {', '.join(map(str, right))}"
        return findings.make("alibi-slopes", evidence, score=1.0)
    return first(check, "alibi-slopes", [(AlibiKnobs(slopes=how, returned="ok"), f"slopes {said}, inside "
                                          "alibi_attention (your alibi_slopes itself is right)")
                                         for how, (said, _) in SLOPES.items() if how != "ok"])


@diagnosis("alibi-sign", ALIBI)
def alibi_sign(check):
    return first(check, "alibi-sign", [
        (AlibiKnobs(bias="reward"), "+m * |p - j|: the bias added with the sign that rewards distance"),
        (AlibiKnobs(bias="key_neg"), "-m * j: fairseq's form with its sign flipped, which rewards distance under "
         "the causal mask")])


@diagnosis("alibi-bias-scaled", ALIBI)
def alibi_scaled(check):
    return first(check, "alibi-bias-scaled", [
        (AlibiKnobs(bias="scaled"), "(q k^T - m * |p - j|) / sqrt(d): the bias divided by sqrt(d) with the scores")])


@diagnosis("alibi-key-only", ALIBI)
def alibi_key_only(check):
    return first(check, "alibi-key-only", [
        (AlibiKnobs(bias="key"), "+m * j: fairseq's bias, equal to -m * (p - j) up to a constant per row under the "
         "causal mask, and not without it")])


@diagnosis(("causal-misaligned", "causal-diagonal", "missing-causal-mask"), ALIBI)
def causal(check):
    return first(check, "missing-causal-mask", [(AlibiKnobs(causal="none"), "causal=True ignored: no mask")]) or \
        first(check, "causal-misaligned", [
            (AlibiKnobs(origin="start"), "the distance measured from i, not from the query's position i + Tk - Tq"),
            (AlibiKnobs(causal="top-left"), "a causal mask aligned top-left (key j visible iff j <= i)"),
            (AlibiKnobs(origin="start", causal="top-left"), "the query taken at position i, not i + Tk - Tq, in the "
             "distance and in the mask")]) or \
        first(check, "causal-diagonal", [
            (AlibiKnobs(causal="no-diagonal"), "a causal mask that hides the query's own key"),
            (AlibiKnobs(causal="one-future"), "a causal mask that shows one later key")])


@diagnosis("softmax-wrong-dim", ALIBI)
def softmax_dim(check):
    return first(check, "softmax-wrong-dim", [(AlibiKnobs(attn=Knobs(softmax_dim=-2)),
                                               "the softmax over the queries (dim=-2)")])


@diagnosis(("missing-scale", "wrong-scale"), ALIBI)
def scale(check):
    """The one factor s for which q k^T * s - m |p - j| reproduces the outputs, on every case."""
    return fitted_scale(check, lambda s: AlibiKnobs(attn=Knobs(scale=s)))
