"""Mistakes any exercise can make: NaN where the reference is finite, an exception."""

from __future__ import annotations

import torch

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge import load
from attn_drill.judge.diagnoses import diagnosis


# --- the rest: NaN, exceptions, and what no known mistake explains ------------------------------

@diagnosis("nan-output", None)
def nan_output(check):
    for o, ref in zip(check.outcomes, check.refs):
        if o.outputs is None:
            continue
        for name, got, want in zip(check.spec.outputs, o.outputs, ref):
            if not bool(torch.isfinite(got).all()) and bool(torch.isfinite(want).all()):
                bad = int((~torch.isfinite(got)).sum())
                return findings.make("nan-output", t("evidence.attention.diagnoses_generic.nan_values", name=name,
                                                     bad=bad, total=got.numel(), case=o.case.label), score=0.9)
    return None


@diagnosis("exception", None)
def raised(check):
    # the checker's own stops (flash: a tensor too large to allow) are named by their own diagnosis
    failed = [o for o in check.outcomes if o.error is not None and not getattr(o.error, "checker_stop", False)]
    if not failed:
        return None
    o = failed[0]
    ran = len(check.outcomes) - len(failed)
    # diagnoses.diagnose finds the exception's own text before symptom_sep, which must start this
    when = t("evidence.attention.diagnoses_generic.raised_when", failed=len(failed), n=len(check.outcomes),
             case=o.case.label) + (t("evidence.attention.diagnoses_generic.others_ran", ran=ran) if ran else "")
    return load.exception_finding(o.error, check.path, when, score=0.6)


