"""Mistakes of relative-position attention alone: the offset's direction, far offsets not clipped, the position
term left out of the scaling. The attention and head diagnoses of attention.py apply to it as they are."""

from __future__ import annotations

from attn_drill.i18n import t
from attn_drill.judge import load
from attn_drill.judge.diagnoses import SCORES, diagnosis, first_outcome, line_of, variant_finding
from attn_drill.judge.variants.attention import Knobs

RELPOS = ("relative-position",)
OFFSETS = {"__sub__", "sub", "__rsub__", "arange", "__neg__", "neg"}
LOOKUP = {"embedding", "__getitem__", "index_select", "clamp", "clip", "__mod__", "remainder", "fmod", "where"}
FAR = ("none", "wrap", "drop")  # Knobs.relpos_far's mistakes, each said by evidence.attention.diagnoses_relpos.far_*


@diagnosis("relpos-direction", RELPOS)
def relpos_direction(check):
    return variant_finding(check, "relpos-direction", Knobs(relpos_offset="i-j"),
                           t("evidence.attention.diagnoses_relpos.direction"),
                           line=line_of(first_outcome(check), OFFSETS))


@diagnosis("relpos-no-clip", RELPOS)
def relpos_no_clip(check):
    for far in FAR:
        how = t(f"evidence.attention.diagnoses_relpos.far_{far}")
        f = variant_finding(check, "relpos-no-clip", Knobs(relpos_far=far), how,
                            line=line_of(first_outcome(check), LOOKUP))
        if f:
            break
    else:
        return None
    raised = [o for o in check.outcomes if o.error is not None]
    if raised:  # the symptom is its evidence: the lookup that raises where T > max_distance + 1
        f.line = load.user_line(raised[0].error, check.path)[0] or f.line
        f.evidence += t("evidence.attention.diagnoses_relpos.raises", raised=len(raised),
                        error=load.describe(raised[0].error))
    case = next(c for c in check.cases if c.dims["T"] > 2 * c.dims["max_distance"] + 1)
    m = case.dims["max_distance"]
    f.evidence += t("evidence.attention.diagnoses_relpos.reach", T=case.dims["T"], m=m, far=case.dims["T"] - 1,
                    last=2 * m)
    return f


@diagnosis("relpos-unscaled", RELPOS)
def relpos_unscaled(check):
    return variant_finding(check, "relpos-unscaled", Knobs(relpos_scaled=False),
                           t("evidence.attention.diagnoses_relpos.unscaled"),
                           line=line_of(first_outcome(check), SCORES | {"__truediv__", "div", "__mul__", "mul"},
                                        last=True))
