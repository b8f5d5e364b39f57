"""Mistakes of mha-dims alone: where the head widths show in the output's shape.

Its W_o maps num_heads * dv features back to dim, and the cases keep num_heads * dv != dim: the merged heads
returned without W_o come back the wrong width. That shape is the symptom; the missing W_o is the cause.
"""

from __future__ import annotations

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge.diagnoses import MATCH, RESHAPES, SHAPE_CAUSES, line_of
from attn_drill.judge.variants.attention import Knobs


def unprojected(check, symptom):
    """missing-output-projection when the merged heads, returned as they are, are the user's outputs on every
    case that ran."""
    ran = [o for o in check.outcomes if o.outputs is not None]
    for o in ran:
        var = check.spec.variant(o.case, Knobs(out_proj=False))
        if any(a.shape != b.shape for a, b in zip(o.outputs, var)) or check.spec.distance(o.outputs, var, var) > MATCH:
            return None
    o = ran[0]
    H, dv, dim = (o.case.dims[n] for n in ("H", "dv", "dim"))
    evidence = t("evidence.attention.diagnoses_dims.unprojected", ran=len(ran), n=len(check.outcomes),
                 symptom=symptom.evidence, H=H, dv=dv, features=H * dv, dim=dim)
    return findings.make("missing-output-projection", evidence, line=line_of(o, RESHAPES, last=True), score=1.0)


SHAPE_CAUSES["mha-dims"] = unprojected
