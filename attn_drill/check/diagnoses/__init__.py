"""Name the mistake: one small function per diagnosis, registered with @diagnosis(slug, exercises).

Each diagnosis looks at what the user's code did on the check's cases (outputs, exceptions, traced calls)
and returns a finding with evidence, or None. Variants of the reference that reproduce the user's outputs
are the main evidence; probes (the effective scale, hooks on the projections) add to it.

The diagnoses live by family in this package; MODULES below is the one place that lists them, in the
order they run (the findings are then sorted by level and score).
"""

from __future__ import annotations

from typing import Callable

from attn_drill import findings
from attn_drill.check import pictures
from attn_drill.check.compare import closeness
from attn_drill.check.variants import Knobs
from attn_drill.report import Finding

REGISTRY: list[tuple[str, tuple[str, ...], Callable]] = []


def diagnosis(slug: str, exercises: tuple[str, ...] | None):
    """Register a diagnosis for these exercises (None: every exercise)."""
    def register(fn):
        REGISTRY.append((slug, exercises, fn))
        return fn
    return register


def diagnose(check) -> list[Finding]:
    """Every diagnosis that applies to this exercise, run on a failed values stage."""
    out = []
    for slug, exercises, fn in REGISTRY:
        if exercises is None or check.spec.id in exercises:
            found = fn(check)
            if found:
                out.append(found)
    if not any(f.level == "error" and f.score >= 0.5 for f in out):
        out.append(values_mismatch(check))
    return out


# --- variants: a known mistake that reproduces the user's outputs -----------------------------

MATCH = 1e-4  # relative L2 distance under which two outputs are the same computation


def match(check, knobs: Knobs) -> tuple[int, int, float, object]:
    """(cases matched, cases that tell it from the reference, worst distance, first telling case)."""
    matched, telling, worst, example = 0, 0, 0.0, None
    for o, ref in zip(check.outcomes, check.refs):
        try:
            var = check.spec.variant(o.case, knobs)
        except RuntimeError:
            var = None  # the mistake raises on this case (a broadcast that cannot happen)
        differs = var is None or any(closeness(a, b) > MATCH for a, b in zip(var, ref))
        if var is None or o.outputs is None:
            same = var is None and o.outputs is None
            dist = 0.0 if same else float("inf")
        else:
            dist = max(closeness(a, b) for a, b in zip(o.outputs, var))
            same = dist <= MATCH
        telling += differs
        if same:
            matched += 1
            if differs and (example is None or example.outputs is None and o.outputs is not None):
                example = o  # prefer a case that ran: it can be pictured
        worst = max(worst, dist)
    return matched, telling, worst, example


def variant_finding(check, slug: str, knobs: Knobs, how: str, line: int | None = None, **params) -> Finding | None:
    n = len(check.outcomes)
    matched, telling, worst, example = match(check, knobs)
    if telling == 0 or matched < n - 1 or example is None:  # all cases, or all but one (a second mistake)
        return None
    exact = "exactly" if worst < 1e-9 else f"to {worst:.1e}"
    evidence = f"{how}: that reproduces your outputs {exact} on {matched} of {n} cases, e.g. {example.case.label}"
    picture = pictures.for_slug(check, slug, knobs, example)
    return findings.make(slug, evidence, line=line, score=matched / n - min(worst, 0.01), picture=picture, **params)


def line_of(o, names: set[str], last: bool = False) -> int | None:
    return o.tracer.first_line(names, last=last) if o and o.tracer else None


def first_outcome(check):
    return next((o for o in check.outcomes if o.error is None), check.outcomes[0])


SCORES = {"matmul", "__matmul__", "einsum", "bmm", "baddbmm"}
MASKING = {"masked_fill", "masked_fill_", "where", "__add__", "__iadd__", "add"}
RESHAPES = {"view", "reshape", "flatten", "permute", "transpose"}


def values_mismatch(check) -> Finding:
    o = next((o for o, r in zip(check.outcomes, check.refs) if o.outputs is not None
              and any(closeness(a, b) > MATCH for a, b in zip(o.outputs, r))), first_outcome(check))
    locate = getattr(check.spec, "locate", None)  # a module spec may say where the computation departs
    extra = f"; {locate(check)}" if locate else ""
    return findings.make("values-mismatch", f"first differing case: {o.case.label}{extra}", score=0.1)


from attn_drill.check.diagnoses import attention, modules, softmax, masks, rope, cache, flash, generic  # noqa: E402,F401 - registers them, in this order

MODULES = (attention, modules, softmax, masks, rope, cache, flash, generic)
