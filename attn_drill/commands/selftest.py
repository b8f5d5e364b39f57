"""The exercise bank checks itself: every skeleton is "not started" (its TODOs raise), every reference passes.

Run it with `python -m attn_drill.commands.selftest` (CI runs it through tests/test_selftest.py).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from attn_drill import catalogue
from attn_drill.process import Job, run_checks


@dataclass
class Result:
    exercise: str
    kind: str  # "skeleton" or "reference"
    ok: bool
    why: str


def selftest(seed: int = 0) -> list[Result]:
    exercises = list(catalogue.exercises().values())
    jobs = [Job(e.skeleton, e.id) for e in exercises] + [Job(e.reference, e.id) for e in exercises]
    reports = list(run_checks(jobs, seed=seed))
    results = []
    for e, report in zip(exercises, reports[: len(exercises)]):
        ok = report.not_started and not report.passed  # its TODOs raise: not started, no mistake named
        results.append(Result(e.id, "skeleton", ok, "not started" if ok else ", ".join(
            f.slug for f in report.findings) or "no verdict"))
    for e, report in zip(exercises, reports[len(exercises):]):
        ok = report.passed and not report.findings
        results.append(Result(e.id, "reference", ok, ", ".join(f.slug for f in report.findings) or "passes"))
    return results


def main() -> int:
    results = selftest()
    for r in results:
        print(f"{'ok ' if r.ok else 'BAD'} {r.exercise:10} {r.kind:9} {r.why}")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
