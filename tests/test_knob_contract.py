"""The knob contract, once for every exercise whose mistakes are knobs of its family's variants (the single
mistakes of diagnoses/pairs.py, the table the pair search uses): the family's knobs left at their defaults are
the reference on every case, and every mistake's knob changes the outputs on some case (a mistake the cases
cannot tell from the reference could never be named)."""

from __future__ import annotations

import pytest
import torch

from attn_drill.judge.compare import closeness
from attn_drill.judge.diagnoses.pairs import SINGLES
from attn_drill.judge.specs import SPECS

EXERCISES = sorted({e for *_, exercises in SINGLES for e in exercises})
CASES = {}


def cases(exercise: str):
    if exercise not in CASES:
        spec = SPECS[exercise]
        cs = spec.cases(torch.Generator().manual_seed(3))
        CASES[exercise] = [(c, spec.unpack(spec.reference(c)[0])) for c in cs]
    return CASES[exercise]


def distance(spec, case, ref, knobs) -> float:
    var = spec.variant(case, knobs)
    return max(closeness(a, b) for a, b in zip(ref, var))


@pytest.mark.parametrize("exercise", EXERCISES)
def test_the_default_knobs_are_the_reference(exercise):
    spec = SPECS[exercise]
    rights = {type(knobs)() for _, knobs, _, exercises in SINGLES if exercise in exercises}
    for right in rights:
        for case, ref in cases(exercise):
            assert distance(spec, case, ref, right) < 1e-12, (type(right).__name__, case.label)


@pytest.mark.parametrize("exercise, slug, knobs, how", [
    (e, slug, knobs, how) for slug, knobs, how, exercises in SINGLES for e in exercises], ids=lambda v: str(v)[:40])
def test_every_mistake_changes_the_outputs(exercise, slug, knobs, how):
    spec = SPECS[exercise]
    far = []
    for case, ref in cases(exercise):
        try:
            far.append(distance(spec, case, ref, knobs))
        except Exception:  # noqa: BLE001 - a mistake that raises on a case is told apart there
            far.append(float("inf"))
    assert max(far) > 1e-6, f"{exercise}: {how} ({slug}) equals the reference on every case"
